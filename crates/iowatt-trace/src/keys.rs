//! The keys that make shared traces and trees private, all derived from one key file with
//! HKDF-SHA-256 (RFC 5869), so a user keeps one secret and each use gets its own key.
//!
//! Names are hashed with HMAC-SHA-256 under the names key, truncated to 96 bits: unlike the
//! study's plain SHA-1, a dictionary of common names (`index.html`, `exams`) cannot reverse it
//! without the key. The same name gives the same hash in a tree snapshot and in a log, so
//! requests still match the recreated files.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

/// The shortest key file accepted: 256 bits of secret.
pub const MIN_KEY_BYTES: usize = 32;

/// Hex characters of a hashed name (96 bits: no collision among billions of names).
pub const NAME_HEX: usize = 24;

/// The longest extension kept by [`hash_name`] with `keep_extension`.
const MAX_EXTENSION: usize = 8;

#[derive(Debug, Error, PartialEq, Eq)]
#[error("the key file holds {0} bytes; at least {MIN_KEY_BYTES} are needed")]
pub struct ShortKey(pub usize);

/// The keys derived from a key file's bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    /// HMAC key for file and directory names.
    pub names: [u8; 32],
    /// Crypto-PAn key for client addresses (AES-128 key, then the padding block).
    pub addresses: [u8; 32],
    /// A public fingerprint of the key file, recorded in what was made with it, so outputs
    /// made with different keys are told apart.
    pub id: String,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys {{ id: {} }}", self.id) // never the secrets
    }
}

impl Keys {
    /// Derives the keys from a key file's whole content (bytes as they are, newline included).
    pub fn derive(secret: &[u8]) -> Result<Self, ShortKey> {
        if secret.len() < MIN_KEY_BYTES {
            return Err(ShortKey(secret.len()));
        }
        let hk = Hkdf::<Sha256>::new(Some(b"iowatt"), secret);
        let expand = |info: &[u8], out: &mut [u8]| {
            hk.expand(info, out)
                .expect("32 bytes is a valid HKDF-SHA-256 length");
        };
        let (mut names, mut addresses, mut id) = ([0u8; 32], [0u8; 32], [0u8; 8]);
        expand(b"iowatt names v1", &mut names);
        expand(b"iowatt addresses v1", &mut addresses);
        expand(b"iowatt key id v1", &mut id);
        Ok(Self {
            names,
            addresses,
            id: hex(&id),
        })
    }
}

/// A name's keyed hash: 24 hex digits, plus the name's extension when `keep_extension` and it
/// has a short alphanumeric one (`report.pdf` → `…​.pdf`; `.htaccess` has none). `.` and `..`
/// stay as they are.
pub fn hash_name(key: &[u8; 32], name: &[u8], keep_extension: bool) -> String {
    if name == b"." || name == b".." {
        return String::from_utf8_lossy(name).into_owned();
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(name);
    let mut out = hex(&mac.finalize().into_bytes()[..NAME_HEX / 2]);
    if keep_extension {
        if let Some(ext) = extension(name) {
            out.push('.');
            out.push_str(ext);
        }
    }
    out
}

/// Each `/`-separated component of `path` hashed; the slashes (leading, trailing, doubled)
/// kept, so the hashed path has the original's shape.
pub fn hash_path(key: &[u8; 32], path: &[u8], keep_extension: bool) -> String {
    let mut out = String::with_capacity(path.len() + 32);
    for (i, part) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        if !part.is_empty() {
            out.push_str(&hash_name(key, part, keep_extension));
        }
    }
    out
}

fn extension(name: &[u8]) -> Option<&str> {
    let dot = name.iter().rposition(|&b| b == b'.').filter(|&i| i > 0)?;
    let ext = &name[dot + 1..];
    let ok = (1..=MAX_EXTENSION).contains(&ext.len()) && ext.iter().all(u8::is_ascii_alphanumeric);
    ok.then(|| std::str::from_utf8(ext).expect("ASCII"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
