//! The shared vocabulary of the ports' error enums.
//!
//! Every operation has its own exhaustive error enum ("a complete description of everything
//! that can go wrong"), and many operations can fail in the same few ways: the collection is
//! missing, it is no catalog, the authorization gate refused, storage failed. [`failures!`]
//! declares such enums so that each of those variants is written once here: it means, says
//! (its `Display`, which reaches clients) and documents the same thing in every operation.

/// Declares error enums, one per operation, each deriving `Debug`, `Clone`, `PartialEq`, `Eq`
/// and `thiserror::Error`. Inside an enum, these variants, written alone, are the shared ones:
///
/// | written               | `Display`                             | from           |
/// |-----------------------|---------------------------------------|----------------|
/// | `CollectionNotFound,` | `collection not found`                |                |
/// | `NotACollection,`     | `the target is not a collection`      |                |
/// | `NotFound,`           | `object not found in this collection` |                |
/// | `Refused(Refusal),`   | the refusal's own (transparent)       | `Refusal`      |
/// | `Store(StoreError),`  | the storage error's own (transparent) | `StoreError`   |
///
/// Every other variant is written in full, with its documentation and `#[error]` attribute,
/// as in a plain `thiserror` enum; so is one of the names above when it means or says
/// something else (it then starts with its attributes, which is how it is told apart).
/// Each enum stays exhaustive: its variants are exactly the ones it lists.
///
/// An enum whose `#[error]` passes format arguments of its own (`"{}", .0.seconds()`) is
/// written as a plain `thiserror` enum instead: the derive this macro writes cannot see
/// the fields those arguments name (macro hygiene).
///
/// ```ignore
/// failures! {
///     /// Creating an object failed.
///     pub enum CreateObjectFailed {
///         /// A top-level object must be a catalog.
///         #[error("a new top-level library must have type catalog")]
///         LibraryMustBeCatalog,
///         CollectionNotFound,
///         NotACollection,
///         Refused(Refusal),
///         Store(StoreError),
///     }
/// }
/// ```
macro_rules! failures {
    // The shared variants: each is replaced by its declaration.
    //
    // `$transparent` is thiserror's keyword as the last arm wrote it, next to the derive:
    // thiserror binds the field of a transparent variant with the derive's hygiene and uses
    // it with the keyword's, so every `#[error(transparent)]` of an enum is written with it.
    (@variants $transparent:tt $head:tt [$($done:tt)*] CollectionNotFound, $($rest:tt)*) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            /// No such (live) collection.
            #[error("collection not found")]
            CollectionNotFound,
        ] $($rest)*);
    };
    (@variants $transparent:tt $head:tt [$($done:tt)*] NotACollection, $($rest:tt)*) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            /// The target is not a catalog.
            #[error("the target is not a collection")]
            NotACollection,
        ] $($rest)*);
    };
    (@variants $transparent:tt $head:tt [$($done:tt)*] NotFound, $($rest:tt)*) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            /// No such collection, or the object is not in it.
            #[error("object not found in this collection")]
            NotFound,
        ] $($rest)*);
    };
    (@variants $transparent:tt $head:tt [$($done:tt)*] Refused(Refusal), $($rest:tt)*) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            /// The authorization gate refused (403, or 404 for what the caller cannot see).
            #[error($transparent)]
            Refused(#[from] medialib_domain::Refusal),
        ] $($rest)*);
    };
    (@variants $transparent:tt $head:tt [$($done:tt)*] Store(StoreError), $($rest:tt)*) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            /// Storage failed.
            #[error($transparent)]
            Store(#[from] $crate::error::StoreError),
        ] $($rest)*);
    };
    // A transparent variant of the enum's own, as written but for the keyword.
    (@variants $transparent:tt $head:tt [$($done:tt)*]
        $(#[doc = $doc:literal])* #[error(transparent)] $variant:ident ($($field:tt)*), $($rest:tt)*
    ) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            $(#[doc = $doc])* #[error($transparent)] $variant($($field)*),
        ] $($rest)*);
    };
    // Any other variant, as written.
    (@variants $transparent:tt $head:tt [$($done:tt)*]
        $(#[$meta:meta])* $variant:ident $(($($fields:tt)*))? $({$($named:tt)*})?, $($rest:tt)*
    ) => {
        $crate::failures::failures!(@variants $transparent $head [$($done)*
            $(#[$meta])* $variant $(($($fields)*))? $({$($named)*})?,
        ] $($rest)*);
    };
    // Every variant read: the enum.
    (@variants $transparent:tt [$($head:tt)*] [$($done:tt)*]) => {
        $($head)* {
            $($done)*
        }
    };
    // The enums to declare.
    ($($(#[$meta:meta])* $vis:vis enum $name:ident { $($variants:tt)* })*) => {
        $(
            $crate::failures::failures!(@variants transparent [
                $(#[$meta])*
                #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
                $vis enum $name
            ] [] $($variants)*);
        )*
    };
}

pub(crate) use failures;

#[cfg(test)]
mod tests {
    use medialib_domain::Refusal;

    use crate::error::StoreError;

    failures! {
        /// Shared variants and one of its own.
        enum Example {
            CollectionNotFound,
            NotACollection,
            NotFound,
            /// One of its own.
            #[error("mine: {0}")]
            Own(u8),
            Refused(Refusal),
            Store(StoreError),
        }

        /// A name of the vocabulary that says something else here.
        enum Other {
            /// Its own text.
            #[error("no object has this permLink")]
            NotFound,
            /// Named fields pass through too.
            #[error("at {at}")]
            Named { at: u8 },
            /// So does a transparent variant of its own.
            #[error(transparent)]
            Inner(#[from] Inner),
        }
    }

    /// An error of its own, wrapped transparently.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[test]
    fn the_shared_variants_say_what_the_vocabulary_says() {
        assert_eq!(
            Example::CollectionNotFound.to_string(),
            "collection not found"
        );
        assert_eq!(
            Example::NotACollection.to_string(),
            "the target is not a collection"
        );
        assert_eq!(
            Example::NotFound.to_string(),
            "object not found in this collection"
        );
        assert_eq!(Example::Own(3).to_string(), "mine: 3");
        let refusal = Refusal::Hidden;
        assert_eq!(Example::from(refusal).to_string(), refusal.to_string());
        let store = StoreError::Unavailable("down".into());
        assert_eq!(Example::from(store.clone()).to_string(), store.to_string());
        assert_eq!(Example::from(store.clone()), Example::Store(store));
    }

    #[test]
    fn a_variant_written_in_full_keeps_its_own_text() {
        assert_eq!(Other::NotFound.to_string(), "no object has this permLink");
        assert_eq!(Other::Named { at: 1 }.to_string(), "at 1");
        assert_eq!(Other::from(Inner).to_string(), "inner");
    }
}
