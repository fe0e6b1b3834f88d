//! Anonymising access-log lines: each private field replaced in place, every other byte kept;
//! paths hashed like the tree snapshot's names; lines that do not parse left out and counted.

use std::io::Cursor;

use iowatt_trace::anonymize::{Anonymizer, Config, LogAnonymizer, Stats};
use iowatt_trace::keys::{hash_name, hash_path, Keys};
use iowatt_trace::CryptoPan;

fn keys() -> Keys {
    Keys::derive(&[7u8; 32]).unwrap()
}

fn config(format: &str) -> Config {
    let k = keys();
    Config {
        format: format.into(),
        names_key: k.names,
        addresses_key: k.addresses,
        keep_extensions: false,
        hash_agents: false,
    }
}

fn anonymize_with(config: &Config, line: &str) -> String {
    let mut a = Anonymizer::new(config).unwrap();
    let mut out = Vec::new();
    a.line(line, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn anonymize(line: &str) -> String {
    anonymize_with(&config("combined"), line)
}

fn name(n: &str) -> String {
    hash_name(&keys().names, n.as_bytes(), false)
}

fn salted(salt: &str, v: &str) -> String {
    name(&format!("{salt}{v}"))
}

fn v4(a: &str) -> String {
    CryptoPan::new(&keys().addresses)
        .ipv4(a.parse().unwrap())
        .to_string()
}

fn v6(a: &str) -> String {
    CryptoPan::new(&keys().addresses)
        .ipv6(a.parse().unwrap())
        .to_string()
}

#[test]
fn a_combined_line_keeps_every_byte_but_the_private_ones() {
    let line = r#"192.0.2.7 - frank [10/Oct/2000:13:55:36 -0700] "GET /docs/exams/q1.pdf HTTP/1.0" 200 2326 "-" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
    let expected = format!(
        r#"{} - {} [10/Oct/2000:13:55:36 -0700] "GET /{}/{}/{} HTTP/1.0" 200 2326 "-" "Mozilla/4.08 [en] (Win98; I ;Nav)""#,
        v4("192.0.2.7"),
        salted("field\0", "frank"),
        name("docs"),
        name("exams"),
        name("q1.pdf"),
    );
    assert_eq!(anonymize(line), expected);
}

#[test]
fn percent_encoded_paths_hash_like_their_decoded_names_on_disk() {
    let k = keys();
    let line = r#"::1 - - [10/Oct/2000:13:55:36 -0700] "GET /x/a%20b.html HTTP/1.1" 200 1 "-" "-""#;
    let hashed = hash_path(&k.names, b"/x/a b.html", false);
    assert!(anonymize(line).contains(&format!("\"GET {hashed} HTTP/1.1\"")));
    // The log's own \xhh escapes (Apache writes raw UTF-8 bytes that way) are undone too.
    let raw = r#"::1 - - [10/Oct/2000:13:55:36 -0700] "GET /caf\xc3\xa9/%C3%A9t%C3%A9 HTTP/1.1" 200 1 "-" "-""#;
    let hashed = hash_path(&k.names, "/café/été".as_bytes(), false);
    assert!(anonymize(raw).contains(&format!("\"GET {hashed} HTTP/1.1\"")));
    // With extensions kept, as tree snapshot --keep-extensions names them.
    let cfg = Config {
        keep_extensions: true,
        ..config("combined")
    };
    let hashed = hash_path(&k.names, b"/x/a b.html", true);
    assert!(hashed.ends_with(".html"));
    assert!(anonymize_with(&cfg, line).contains(&hashed));
}

#[test]
fn escaped_quotes_in_a_target_are_part_of_the_name_and_the_rest_is_kept() {
    let line = r#"10.1.2.3 - - [10/Oct/2000:13:55:36 -0700] "GET /a\"b/c HTTP/1.0" 404 - "-" "curl \"x\"""#;
    let out = anonymize(line);
    let expected = format!(
        r#"{} - - [10/Oct/2000:13:55:36 -0700] "GET /{}/{} HTTP/1.0" 404 - "-" "curl \"x\"""#,
        v4("10.1.2.3"),
        name("a\"b"),
        name("c")
    );
    assert_eq!(out, expected);
}

#[test]
fn ipv6_and_ipv4_mapped_clients_and_host_names() {
    let tail = r#" - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "-" "-""#;
    let out = anonymize(&format!("2001:db8::1{tail}"));
    assert_eq!(out, format!("{}{tail}", v6("2001:db8::1")));
    // The same client through an IPv6 socket keeps its IPv4 anonymisation.
    let out = anonymize(&format!("::ffff:192.0.2.7{tail}"));
    assert_eq!(out, format!("::ffff:{}{tail}", v4("192.0.2.7")));
    // A name (HostnameLookups on) is hashed, case-insensitively.
    let out = anonymize(&format!("Dialup-12.Example.NET{tail}"));
    assert_eq!(out, format!("{}{tail}", name("dialup-12.example.net")));
    assert_eq!(anonymize(&format!("-{tail}")), format!("-{tail}"));
}

#[test]
fn queries_and_fragments_become_keyed_hashes_and_odd_targets_are_handled() {
    let line = |target: &str| {
        format!(
            r#"192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "OPTIONS {target} HTTP/1.1" 200 1 "-" "-""#
        )
    };
    let target = |t: &str| {
        let out = anonymize(&line(t));
        let start = out.find("OPTIONS ").unwrap() + 8;
        let end = out[start..].find(' ').unwrap() + start;
        out[start..end].to_string()
    };
    assert_eq!(target("*"), "*");
    assert_eq!(
        target("/search?q=exam+answers#top"),
        format!(
            "/{}?{}#{}",
            name("search"),
            salted("?", "q=exam+answers"),
            salted("#", "top")
        )
    );
    assert_eq!(target("/a?"), format!("/{}?", name("a")));
    assert_eq!(
        target("http://WWW.Example.com:8080/a/b.html?x=1"),
        format!(
            "http://{}:8080/{}/{}?{}",
            name("www.example.com"),
            name("a"),
            name("b.html"),
            salted("?", "x=1")
        )
    );
    assert_eq!(
        target("https://bob:pw@example.com/"),
        format!("https://{}@{}/", salted("@", "bob:pw"), name("example.com"))
    );
    assert_eq!(
        target("example.com:443"),
        format!("{}:443", name("example.com"))
    );
    assert_eq!(
        target("//a//b/"),
        format!("//{}//{}/", name("a"), name("b"))
    );
    assert_eq!(target("/../etc"), format!("/../{}", name("etc")));
    assert_eq!(target("index.html"), name("index.html"));
}

#[test]
fn referers_are_hashed_like_targets_users_are_hashed_and_dashes_stay() {
    let line = r#"192.0.2.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 1 "http://example.com/a?q=1" "Wget""#;
    let out = anonymize(line);
    let referer = format!(
        "\"http://{}/{}?{}\"",
        name("example.com"),
        name("a"),
        salted("?", "q=1")
    );
    assert!(out.contains(&referer), "{out}");
    assert!(out.contains(&format!(" - {} [", salted("field\0", "alice"))));
    assert!(out.ends_with("\"Wget\""));
    let odd = line.replace("http://example.com/a?q=1", "android-app:com.x");
    assert!(anonymize(&odd).contains(&format!("\"{}\"", salted("field\0", "android-app:com.x"))));
    let same_site = line.replace("http://example.com/a?q=1", "/a");
    assert!(anonymize(&same_site).contains(&format!("\"/{}\"", name("a"))));
}

#[test]
fn agents_are_kept_unless_asked_and_vhosts_are_kept() {
    let line = r#"www.example.com:80 192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "-" "Mozilla/5.0 (me@example.com)""#;
    let out = anonymize_with(&config("vhost_combined"), line);
    assert!(out.starts_with(&format!("www.example.com:80 {} ", v4("192.0.2.7"))));
    assert!(out.ends_with("\"Mozilla/5.0 (me@example.com)\""));
    let cfg = Config {
        hash_agents: true,
        ..config("vhost_combined")
    };
    let out = anonymize_with(&cfg, line);
    assert!(out.ends_with(&format!(
        "\"{}\"",
        salted("field\0", "Mozilla/5.0 (me@example.com)")
    )));
}

#[test]
fn other_leaky_directives_are_rewritten_by_what_they_hold() {
    let format = r#"%a %t "%r" %s %b %U %q %f "%{X-Forwarded-For}i" "%{Cookie}i" %D"#;
    let line = r#"192.0.2.7 [10/Oct/2000:13:55:36 -0700] "GET /a%20b?x=1 HTTP/1.1" 200 5 /a%20b ?x=1 /srv/a%20b "198.51.100.1, 203.0.113.9" "sid=42" 1234"#;
    let expected = format!(
        r#"{} [10/Oct/2000:13:55:36 -0700] "GET /{}?{} HTTP/1.1" 200 5 /{} ?{} /{}/{} "{}, {}" "{}" 1234"#,
        v4("192.0.2.7"),
        name("a b"),
        salted("?", "x=1"),
        name("a b"),
        salted("?", "x=1"),
        name("srv"),
        name("a%20b"), // a file path on disk: no URL encoding to undo
        v4("198.51.100.1"),
        v4("203.0.113.9"),
        salted("field\0", "sid=42"),
    );
    assert_eq!(anonymize_with(&config(format), line), expected);
}

fn run(format: &str, text: &str) -> (String, Stats) {
    let a = Anonymizer::new(&config(format)).unwrap();
    let mut log = LogAnonymizer::new(Box::new(Cursor::new(text.as_bytes().to_vec())), a);
    let mut out = Vec::new();
    // A tiny chunk size, so lines are carried across chunks.
    loop {
        let min = out.len() + 10;
        if !log.next_chunk(&mut out, min).unwrap() {
            break;
        }
    }
    (String::from_utf8(out).unwrap(), log.stats().clone())
}

#[test]
fn lines_that_do_not_parse_are_left_out_counted_and_numbered() {
    let good = r#"192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 1 "-" "-""#;
    let text = format!("{good}\r\nsecret.example.com sent garbage\n\n{good}\n{good}");
    let (out, stats) = run("combined", &text);
    let line = anonymize(good);
    assert_eq!(out, format!("{line}\r\n{line}\n{line}"));
    assert_eq!(
        (stats.lines, stats.written, stats.blank, stats.bad),
        (5, 3, 1, 1)
    );
    assert_eq!(stats.bad_lines[0].0, 2);
    assert!(!out.contains("secret"));
    assert_eq!((stats.addresses, stats.host_names), (1, 0));
}

#[test]
fn the_output_depends_on_the_key_only() {
    let line = r#"192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 1 "-" "-""#;
    assert_eq!(anonymize(line), anonymize(line));
    let other = Keys::derive(&[8u8; 32]).unwrap();
    let cfg = Config {
        names_key: other.names,
        addresses_key: other.addresses,
        ..config("combined")
    };
    let (a, b) = (anonymize(line), anonymize_with(&cfg, line));
    assert_ne!(a, b);
    assert_ne!(a.split(' ').next(), b.split(' ').next());
}

#[test]
fn arbitrary_lines_give_a_line_or_an_error_never_a_panic() {
    let pieces = [
        "192.0.2.7",
        "::1",
        " ",
        "-",
        "[10/Oct/2000:13:55:36 -0700]",
        "\"",
        "\\\"",
        "GET",
        "/a",
        "%",
        "%2",
        "%zz",
        "?",
        "#",
        "http://",
        "@",
        ":",
        "[",
        "]",
        "200",
        "\\x",
        "\\xzz",
        "é",
    ];
    let mut a = Anonymizer::new(&config("combined")).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::new();
    for _ in 0..20_000 {
        let mut line = String::new();
        for _ in 0..(state % 24) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            line.push_str(pieces[(state % pieces.len() as u64) as usize]);
        }
        out.clear();
        let _ = a.line(&line, &mut out);
    }
}

#[test]
fn fields_after_the_formats_last_are_kept_only_when_dashes_or_numbers() {
    let line = r#"192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "-" "-" "-" 1234 "sid=\"42\"" tail"#;
    let out = anonymize(line);
    let expected = format!(
        r#"{} - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "-" "-" "-" 1234 "{}" {}"#,
        v4("192.0.2.7"),
        salted("field\0", r#"sid=\"42\""#),
        salted("field\0", "tail"),
    );
    assert_eq!(out, expected);
    // A combined log read as common: the referer and agent are extra fields, hashed.
    let combined = r#"192.0.2.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "http://example.com/private" "-""#;
    let out = anonymize_with(&config("common"), combined);
    assert!(
        !out.contains("private") && out.ends_with(r#" "-""#),
        "{out}"
    );
    // An unclosed quote at the end stays unclosed, and hashed.
    let out = anonymize(&format!("{line} \"open"));
    assert!(out.ends_with(&format!(" \"{}", salted("field\0", "open"))));
}

#[test]
fn every_format_the_parser_takes_has_a_role_for_each_field() {
    let pieces = [
        "%h",
        "%a",
        "%{c}a",
        "%l",
        "%u",
        "%t",
        "%{%d/%b}t",
        "\"%r\"",
        "%>s",
        "%<s",
        "%b",
        "%O",
        "%{Referer}i",
        "%400,501{User-Agent}i",
        "%!200{Cookie}C",
        "%%",
        "%U",
        "%q",
        "%f",
        "%D",
        "%{X-Forwarded-For}i",
        "%v",
        ":",
        " ",
        "\"",
        "[",
        "é",
        "{",
        "}",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut taken = 0;
    for _ in 0..20_000 {
        let mut format = String::from("%t \"%r\" ");
        for _ in 0..(state % 9) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            format.push_str(pieces[(state % pieces.len() as u64) as usize]);
        }
        if iowatt_trace::LogFormat::parse(&format).is_ok() {
            taken += 1;
            assert!(Anonymizer::new(&config(&format)).is_ok(), "{format}");
        }
    }
    assert!(taken > 1000, "{taken}");
}
