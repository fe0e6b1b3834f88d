"""The key file behind private trees and logs: refused when missing or short, and one name gets
one hash for one key file, whichever tool hashes it."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from iowatt.errors import ConfigError
from iowatt.keys import load_keys


def test_names_are_hmac_sha256_under_the_hkdf_names_key(tmp_path):
    secret = bytes(range(40))
    (tmp_path / "k").write_bytes(secret)
    keys = load_keys(tmp_path / "k")
    # RFC 5869 with salt "iowatt", computed here independently of the Rust core.
    prk = hmac.new(b"iowatt", secret, hashlib.sha256).digest()
    names_key = hmac.new(prk, b"iowatt names v1\x01", hashlib.sha256).digest()
    expected = hmac.new(names_key, b"exams", hashlib.sha256).hexdigest()[:24]
    assert keys.hash_names(["exams", "exams.pdf"], keep_extensions=True) == [
        expected,
        hmac.new(names_key, b"exams.pdf", hashlib.sha256).hexdigest()[:24] + ".pdf",
    ]
    assert "names" not in repr(keys) and keys.id in repr(keys)


def test_non_utf8_names_hash_from_their_bytes(tmp_path):
    (tmp_path / "k").write_bytes(b"k" * 32)
    keys = load_keys(tmp_path / "k")
    # os.fsdecode turns undecodable bytes into surrogates; the hash is of the original bytes.
    assert keys.hash_names(["\udcff.txt"]) == keys.hash_names([b"\xff.txt"])


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(None, "does not exist"), (b"short\n", "holds 6 bytes"), ("dir", "not a regular file")],
)
def test_bad_key_files_are_named_with_a_way_to_make_one(tmp_path, content, fragment):
    path = tmp_path / "key"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        load_keys(path)
    assert str(path) in e.value.message and fragment in e.value.message
    assert "head -c 32 /dev/urandom" in (e.value.hint or "")
