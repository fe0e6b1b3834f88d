//! Crypto-PAn against the reference distribution's sample trace (its key and the addresses of
//! `sample_trace_raw.dat` / `sample_trace_sanitized.dat`, as other ports test them), IPv6
//! vectors published with those ports, and the prefix-preserving property on random addresses.

use std::net::{Ipv4Addr, Ipv6Addr};

use iowatt_trace::CryptoPan;

/// The key of the reference implementation's sample.
const REFERENCE_KEY: [u8; 32] = [
    21, 34, 23, 141, 51, 164, 207, 128, 19, 10, 91, 22, 73, 144, 125, 16, 216, 152, 143, 131, 121,
    121, 101, 39, 98, 87, 76, 45, 42, 132, 34, 2,
];

const IPV4: &[(&str, &str)] = &[
    ("128.11.68.132", "135.242.180.132"),
    ("129.118.74.4", "134.136.186.123"),
    ("130.132.252.244", "133.68.164.234"),
    ("141.223.7.43", "141.167.8.160"),
    ("141.233.145.108", "141.129.237.235"),
    ("152.163.225.39", "151.140.114.167"),
    ("156.29.3.236", "147.225.12.42"),
    ("165.247.96.84", "162.9.99.234"),
    ("166.107.77.190", "160.132.178.185"),
    ("192.102.249.13", "252.138.62.131"),
    ("192.215.32.125", "252.43.47.189"),
    ("192.233.80.103", "252.25.108.8"),
    ("192.41.57.43", "252.222.221.184"),
    ("193.150.244.223", "253.169.52.216"),
    ("195.205.63.100", "255.186.223.5"),
    ("198.200.171.101", "249.199.68.213"),
    ("198.26.132.101", "249.36.123.202"),
    ("198.36.213.5", "249.7.21.132"),
    ("198.51.77.238", "249.18.186.254"),
    ("199.217.79.101", "248.38.184.213"),
    ("202.49.198.20", "245.206.7.234"),
    ("203.12.160.252", "244.248.163.4"),
    ("204.184.162.189", "243.192.77.90"),
    ("204.202.136.230", "243.178.4.198"),
    ("204.29.20.4", "243.33.20.123"),
    ("205.178.38.67", "242.108.198.51"),
    ("205.188.147.153", "242.96.16.101"),
    ("205.188.248.25", "242.96.88.27"),
    ("205.245.121.43", "242.21.121.163"),
    ("207.105.49.5", "241.118.205.138"),
    ("207.135.65.238", "241.202.129.222"),
    ("207.155.9.214", "241.220.250.22"),
    ("207.188.7.45", "241.255.249.220"),
    ("207.25.71.27", "241.33.119.156"),
    ("207.33.151.131", "241.1.233.131"),
    ("208.147.89.59", "227.237.98.191"),
    ("208.234.120.210", "227.154.67.17"),
    ("208.28.185.184", "227.39.94.90"),
    ("208.52.56.122", "227.8.63.165"),
    ("209.12.231.7", "226.243.167.8"),
    ("209.238.72.3", "226.6.119.243"),
    ("209.246.74.109", "226.22.124.76"),
    ("209.68.60.238", "226.184.220.233"),
    ("209.85.249.6", "226.170.70.6"),
    ("212.120.124.31", "228.135.163.231"),
    ("212.146.8.236", "228.19.4.234"),
    ("212.186.227.154", "228.59.98.98"),
    ("212.204.172.118", "228.71.195.169"),
    ("212.206.130.201", "228.69.242.193"),
    ("216.148.237.145", "235.84.194.111"),
    ("216.157.30.252", "235.89.31.26"),
    ("216.184.159.48", "235.96.225.78"),
    ("216.227.10.221", "235.28.253.36"),
    ("216.254.18.172", "235.7.16.162"),
    ("216.32.132.250", "235.192.139.38"),
    ("216.35.217.178", "235.195.157.81"),
    ("24.0.250.221", "100.15.198.226"),
    ("24.13.62.231", "100.2.192.247"),
    ("24.14.213.138", "100.1.42.141"),
    ("24.5.0.80", "100.9.15.210"),
    ("24.7.198.88", "100.10.6.25"),
    ("24.94.26.44", "100.88.228.35"),
    ("38.15.67.68", "64.3.66.187"),
    ("4.3.88.225", "124.60.155.63"),
    ("63.14.55.111", "95.9.215.7"),
    ("63.195.241.44", "95.179.238.44"),
    ("63.97.7.140", "95.97.9.123"),
    ("64.14.118.196", "0.255.183.58"),
    ("64.34.154.117", "0.221.154.117"),
    ("64.39.15.238", "0.219.7.41"),
    ("10.185.25.118", "117.161.29.118"),
];

#[test]
fn ipv4_matches_the_reference_sample_trace() {
    let pan = CryptoPan::new(&REFERENCE_KEY);
    for &(raw, anon) in IPV4 {
        let got = pan.ipv4(raw.parse().unwrap());
        assert_eq!(got, anon.parse::<Ipv4Addr>().unwrap(), "{raw}");
    }
}

#[test]
fn ipv6_matches_the_published_vectors() {
    let pan = CryptoPan::new(&REFERENCE_KEY);
    for (raw, anon) in [
        ("::1", "78ff:f001:9fc0:20df:8380:b1f1:704:ed"),
        ("::2", "78ff:f001:9fc0:20df:8380:b1f1:704:ef"),
        ("::ffff", "78ff:f001:9fc0:20df:8380:b1f1:704:f838"),
        ("2001:db8::1", "4401:2bc:603f:d91d:27f:ff8e:e6f1:dc1e"),
        ("2001:db8::2", "4401:2bc:603f:d91d:27f:ff8e:e6f1:dc1c"),
    ] {
        let got = pan.ipv6(raw.parse().unwrap());
        assert_eq!(got, anon.parse::<Ipv6Addr>().unwrap(), "{raw}");
    }
    // yacryptopan's README, with its own key.
    let pan = CryptoPan::new(b"32-char-str-for-AES-key-and-pad.");
    assert_eq!(
        pan.ipv4("192.0.2.1".parse().unwrap()),
        "192.0.125.244".parse::<Ipv4Addr>().unwrap()
    );
    assert_eq!(
        pan.ipv6("2001:db8::1".parse().unwrap()),
        "27fe:8bc7:fee:1e:1e1f:f0fe:f0e1:83fd"
            .parse::<Ipv6Addr>()
            .unwrap()
    );
}

#[test]
fn an_ipv4_address_at_the_top_of_an_ipv6_one_anonymises_to_the_same_prefix() {
    // IPv4 takes the top 32 bits of the block, so x.y.z.w << 96 as IPv6 starts like IPv4's result.
    let pan = CryptoPan::new(&REFERENCE_KEY);
    for &(raw, anon) in IPV4 {
        let v4: Ipv4Addr = raw.parse().unwrap();
        let v6 = Ipv6Addr::from(u128::from(u32::from(v4)) << 96);
        let top = u128::from(pan.ipv6(v6)) >> 96;
        assert_eq!(top as u32, u32::from(anon.parse::<Ipv4Addr>().unwrap()));
    }
}

/// xorshift64*: the same "random" addresses on every run, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn u128(&mut self) -> u128 {
        u128::from(self.next()) << 64 | u128::from(self.next())
    }
}

fn common_prefix(a: u128, b: u128) -> u32 {
    (a ^ b).leading_zeros()
}

#[test]
fn addresses_sharing_exactly_k_bits_map_to_addresses_sharing_exactly_k_bits() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut key = [0u8; 32];
    for chunk in key.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    let pan = CryptoPan::new(&key);
    for k in 0..128u32 {
        // b = a with bit k flipped and the bits after it random: they share exactly k bits.
        let a = rng.u128();
        let low = if k == 127 { 0 } else { u128::MAX >> (k + 1) };
        let b = (a ^ (1u128 << (127 - k))) & !low | rng.u128() & low;
        assert_eq!(common_prefix(a, b), k);
        let (x, y) = (pan.ipv6(Ipv6Addr::from(a)), pan.ipv6(Ipv6Addr::from(b)));
        assert_eq!(common_prefix(x.into(), y.into()), k, "k = {k}");
    }
    for k in 0..32u32 {
        let a = rng.next() as u32;
        let low = if k == 31 { 0 } else { u32::MAX >> (k + 1) };
        let b = (a ^ (1u32 << (31 - k))) & !low | (rng.next() as u32) & low;
        let (x, y) = (pan.ipv4(a.into()), pan.ipv4(b.into()));
        assert_eq!((u32::from(x) ^ u32::from(y)).leading_zeros(), k, "k = {k}");
    }
}

#[test]
fn the_mapping_is_one_to_one_and_depends_on_the_key() {
    let pan = CryptoPan::new(&REFERENCE_KEY);
    let other = CryptoPan::new(&[9u8; 32]);
    let mut seen = std::collections::HashSet::new();
    for a in 0..4096u32 {
        let addr = Ipv4Addr::from(0x0a00_0000 | a);
        assert!(seen.insert(pan.ipv4(addr)));
        assert_ne!(pan.ipv4(addr), addr);
    }
    let addr = "128.11.68.132".parse().unwrap();
    assert_ne!(pan.ipv4(addr), other.ipv4(addr));
    assert_eq!(format!("{pan:?}"), "CryptoPan { .. }");
}
