//! Web access logs as the replay engine and the simulators read them: a log format in Apache's
//! `mod_log_config` syntax (or a named one: `common`, `combined`, `vhost_combined`), and the
//! fields of one line in that format; the keys that hash names and addresses, so a log and a
//! file tree can be shared without them.

pub mod anonymize;
pub mod cryptopan;
pub mod format;
pub mod keys;
pub mod line;
pub mod log;
pub mod time;

pub use anonymize::{Anonymizer, LogAnonymizer};
pub use cryptopan::CryptoPan;
pub use format::{Directive, LogFormat, Token};
pub use keys::{hash_name, hash_path, Keys};
pub use line::{parse_line, parse_line_spans, LineError, Record};
pub use log::{
    parse_log, parse_text, read_log, read_log_until, LogFile, Parsed, Requests, Strings,
};
