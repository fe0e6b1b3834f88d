//! Keys from a key file, and keyed names: checked against an independent HMAC-SHA-256 and
//! HKDF computation (Python's hmac and the RFC 5869 construction, values below).

use iowatt_trace::keys::{hash_name, hash_path, Keys, ShortKey, NAME_HEX};

fn keys() -> Keys {
    Keys::derive(&[7u8; 32]).unwrap()
}

#[test]
fn a_key_file_shorter_than_32_bytes_is_refused() {
    assert_eq!(Keys::derive(&[1u8; 31]).unwrap_err(), ShortKey(31));
    assert!(Keys::derive(&[1u8; 32]).is_ok());
}

#[test]
fn keys_match_rfc5869_hkdf() {
    // python: prk = hmac(b"iowatt", b"\x07"*32, sha256); okm = hmac(prk, info + b"\x01", sha256)
    let k = keys();
    assert_eq!(k.id, "0dc95d3a952f69ca");
    assert_ne!(k.names, k.addresses);
    // python: hmac(names_key, b"index.html", sha256).hexdigest()[:24]
    assert_eq!(
        hash_name(&k.names, b"index.html", false),
        "4be64841656243709f36c504"
    );
    assert_eq!(
        format!("{k:?}"),
        "Keys { id: 0dc95d3a952f69ca }",
        "no secret in logs"
    );
}

#[test]
fn names_hash_to_24_hex_digits_and_keep_short_extensions_on_request() {
    let k = keys();
    let plain = hash_name(&k.names, b"index.html", false);
    assert_eq!(plain.len(), NAME_HEX);
    assert!(plain.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        hash_name(&k.names, b"index.html", true),
        format!("{plain}.html")
    );
    // No extension: hidden files, long or odd suffixes.
    assert_eq!(hash_name(&k.names, b".htaccess", true).len(), NAME_HEX);
    assert_eq!(hash_name(&k.names, b"a.verylongext", true).len(), NAME_HEX);
    assert_eq!(hash_name(&k.names, b"a.b-c", true).len(), NAME_HEX);
    assert_eq!(hash_name(&k.names, b"..", true), "..");
}

#[test]
fn another_key_gives_other_names() {
    let other = Keys::derive(&[8u8; 32]).unwrap();
    assert_ne!(
        hash_name(&keys().names, b"exams", false),
        hash_name(&other.names, b"exams", false)
    );
}

#[test]
fn paths_keep_their_shape() {
    let k = keys();
    let h = |n: &str| hash_name(&k.names, n.as_bytes(), false);
    assert_eq!(
        hash_path(&k.names, b"/a//b/", false),
        format!("/{}//{}/", h("a"), h("b"))
    );
    assert_eq!(hash_path(&k.names, b"a", false), h("a"));
    assert_eq!(hash_path(&k.names, b"/", false), "/");
}
