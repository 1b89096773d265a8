//! Integration tests live under integration/.
