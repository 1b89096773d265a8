//! SHA-256 that can stop and resume: an upload's whole-file digest is computed as its bytes
//! arrive, across PATCH requests and server restarts, so its state is a value the database keeps.

use sha2::digest::generic_array::GenericArray;

const INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Compresses one 64-byte block into `state`.
fn compress(state: &mut [u32; 8], block: &[u8]) {
    sha2::compress256(state, std::slice::from_ref(GenericArray::from_slice(block)));
}

/// A SHA-256 computation in progress, which [`ResumableSha256::to_text`] turns into text and
/// [`ResumableSha256::from_text`] back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumableSha256 {
    state: [u32; 8],
    /// Bytes hashed so far, buffered ones included.
    length: u64,
    /// The bytes after the last whole 64-byte block (fewer than 64).
    pending: Vec<u8>,
}

/// Text that is not a saved [`ResumableSha256`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a saved SHA-256 state")]
pub struct InvalidHashState;

impl Default for ResumableSha256 {
    fn default() -> Self {
        Self::new()
    }
}

impl ResumableSha256 {
    /// The digest of nothing yet.
    pub fn new() -> Self {
        Self {
            state: INITIAL,
            length: 0,
            pending: Vec::with_capacity(64),
        }
    }

    /// How many bytes have been hashed.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// Hashes more bytes. Whole blocks are compressed where they lie, without a copy.
    pub fn update(&mut self, mut data: &[u8]) {
        self.length = self.length.wrapping_add(data.len() as u64);
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < 64 {
                return;
            }
            compress(&mut self.state, &self.pending);
            self.pending.clear();
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            compress(&mut self.state, block);
        }
        self.pending.extend_from_slice(blocks.remainder());
    }

    /// The digest of everything hashed (FIPS 180-4 padding).
    pub fn finish(&self) -> [u8; 32] {
        let mut state = self.state;
        let mut tail = self.pending.clone();
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&self.length.wrapping_mul(8).to_be_bytes());
        for block in tail.chunks_exact(64) {
            compress(&mut state, block);
        }
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// The state as text: `sha256:` + eight state words in hex + `:` + length + `:` + the
    /// pending bytes in hex.
    pub fn to_text(&self) -> String {
        let words: String = self.state.iter().map(|w| format!("{w:08x}")).collect();
        let pending = crate::hex::lower(&self.pending);
        format!("sha256:{words}:{}:{pending}", self.length)
    }

    /// Reads a state written by [`ResumableSha256::to_text`].
    pub fn from_text(text: &str) -> Result<Self, InvalidHashState> {
        let mut parts = text
            .strip_prefix("sha256:")
            .ok_or(InvalidHashState)?
            .split(':');
        let (Some(words), Some(length), Some(pending), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(InvalidHashState);
        };
        if words.len() != 64 || pending.len() % 2 != 0 || pending.len() >= 128 {
            return Err(InvalidHashState);
        }
        let mut state = [0u32; 8];
        for (i, word) in state.iter_mut().enumerate() {
            let hex = words.get(i * 8..i * 8 + 8).ok_or(InvalidHashState)?;
            *word = u32::from_str_radix(hex, 16).map_err(|_| InvalidHashState)?;
        }
        let length: u64 = length.parse().map_err(|_| InvalidHashState)?;
        let pending = (0..pending.len() / 2)
            .map(|i| {
                pending
                    .get(i * 2..i * 2 + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(InvalidHashState)
            })
            .collect::<Result<Vec<u8>, _>>()?;
        if length % 64 != pending.len() as u64 {
            return Err(InvalidHashState);
        }
        Ok(Self {
            state,
            length,
            pending,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::Digest;

    fn reference(data: &[u8]) -> [u8; 32] {
        sha2::Sha256::digest(data).into()
    }

    #[test]
    fn known_digests() {
        let empty = ResumableSha256::new().finish();
        assert_eq!(empty, reference(b""));
        let mut abc = ResumableSha256::new();
        abc.update(b"abc");
        assert_eq!(abc.finish(), reference(b"abc"));
    }

    proptest! {
        #[test]
        fn stopping_and_resuming_anywhere_gives_the_same_digest(
            data in proptest::collection::vec(any::<u8>(), 0..600),
            cuts in proptest::collection::vec(0usize..600, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut hasher = ResumableSha256::new();
            let mut at = 0;
            for cut in cuts.into_iter().chain([data.len()]) {
                hasher.update(&data[at..cut]);
                at = cut;
                hasher = ResumableSha256::from_text(&hasher.to_text()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            prop_assert_eq!(hasher.length(), data.len() as u64);
            prop_assert_eq!(hasher.finish(), reference(&data));
        }
    }

    #[test]
    fn damaged_states_are_refused() {
        let good = ResumableSha256::new().to_text();
        assert!(ResumableSha256::from_text(&good).is_ok());
        for bad in [
            "",
            "sha1:00",
            &good.replace("sha256:6", "sha256:g"),
            &format!("{good}00"),
            &good.replace(":0:", ":1:"),
            &format!("{good}:x"),
        ] {
            assert!(ResumableSha256::from_text(bad).is_err(), "{bad}");
        }
    }
}
