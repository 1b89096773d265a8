//! Media: where an object's bytes live, how they are asked for, uploaded and delivered.

mod key;
mod range;

pub use key::{InvalidStorageKey, StorageKey};
pub use range::{ByteSpan, RangeAnswer, resolve_range};
