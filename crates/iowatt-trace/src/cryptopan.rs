//! Crypto-PAn: prefix-preserving anonymisation of IPv4 and IPv6 addresses.
//!
//! Xu, Fan, Ammar, Moon, "Prefix-Preserving IP Address Anonymization: Measurement-based
//! Security Evaluation and a New Cryptography-based Scheme", ICNP 2002. Bit `i` of the output
//! is bit `i` of the input flipped by a pseudo-random function of the `i` bits before it: the
//! top bit of AES-128 applied to those bits, padded to 128 with a secret block. So two addresses
//! that share exactly a k-bit prefix map to two that share exactly a k-bit prefix (subnets stay
//! subnets), and nothing else about the input can be learnt without the key.
//!
//! The 32-byte key is the AES key, then the block whose encryption is the padding, as the
//! reference implementation takes it. An IPv4 address is the top 32 bits of the 128-bit block,
//! as in the reference (whose sample trace the tests check) and in its IPv6 generalisations.
//!
//! Known limits (from the paper): prefix preservation is the point, so an attacker who knows a
//! few original/anonymised pairs learns the mapping of their shared prefixes, and the structure
//! of a network (how many hosts per subnet) shows through.

use std::net::{Ipv4Addr, Ipv6Addr};

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::{Aes128, Block};

/// An address anonymiser for one key.
#[derive(Clone)]
pub struct CryptoPan {
    cipher: Aes128,
    pad: u128,
}

impl std::fmt::Debug for CryptoPan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CryptoPan { .. }") // never the key
    }
}

impl CryptoPan {
    pub fn new(key: &[u8; 32]) -> Self {
        let cipher = Aes128::new(Block::from_slice(&key[..16]));
        let mut pad = Block::clone_from_slice(&key[16..]);
        cipher.encrypt_block(&mut pad);
        Self {
            cipher,
            pad: u128::from_be_bytes(pad.into()),
        }
    }

    pub fn ipv4(&self, addr: Ipv4Addr) -> Ipv4Addr {
        let top = u128::from(u32::from(addr)) << 96;
        let out = self.anonymize(top, 32) >> 96;
        Ipv4Addr::from(u32::try_from(out).expect("the low 96 bits were shifted out"))
    }

    pub fn ipv6(&self, addr: Ipv6Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.anonymize(u128::from(addr), 128))
    }

    /// The first `bits` bits of `addr` (held at the top of a u128) anonymised.
    fn anonymize(&self, addr: u128, bits: usize) -> u128 {
        // Every block depends on the original address only, so all of them are encrypted in
        // one call, which lets AES-NI work on several at once.
        let mut blocks = [Block::default(); 128];
        for (pos, block) in blocks[..bits].iter_mut().enumerate() {
            let kept = u128::MAX.checked_shl(128 - pos as u32).unwrap_or(0);
            *block = Block::from((addr & kept | self.pad & !kept).to_be_bytes());
        }
        self.cipher.encrypt_blocks(&mut blocks[..bits]);
        let flips = blocks[..bits]
            .iter()
            .enumerate()
            .fold(0u128, |acc, (pos, b)| {
                acc | u128::from(b[0] >> 7) << (127 - pos)
            });
        addr ^ flips
    }
}
