//! The properties the fuzz targets check, one module per target (`fuzz_targets/*.rs`
//! only hand libFuzzer's input to `check`). A failed assertion is a finding: libFuzzer
//! saves the input under `fuzz/artifacts/<target>/`.
//!
//! Each check states what must hold for every input, mostly against an oracle written
//! here independently of the domain's code (a second, simpler reading of the same rule).
//! `tests/corpus.rs` replays the committed seed corpora through the same checks with
//! plain `cargo test`, so the properties run on stable without any instrumentation.

pub mod authorization;
pub mod ids;
pub mod object_form;
pub mod redirect_uri;
pub mod text_values;

/// Splits fuzz input into lines (`\n`), each decoded as a form component as it would
/// arrive in a query string; `None` when one does not decode.
pub fn form_lines(data: &[u8]) -> Option<Vec<String>> {
    data.split(|b| *b == b'\n')
        .map(|l| medialib_domain::form::decode_component(l).ok())
        .collect()
}

/// One form component decoded by a second, independent reading of the encoding:
/// `+` is a space, `%` takes exactly two hexadecimal digits, the result must be UTF-8.
pub fn oracle_component(raw: &[u8]) -> Result<String, medialib_domain::form::InvalidForm> {
    use medialib_domain::form::InvalidForm;
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                let hex = |j: usize| raw.get(j).and_then(|b| char::from(*b).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                    return Err(InvalidForm::BadEscape);
                };
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| InvalidForm::NotUtf8)
}
