//! Hand-made lines for each trap of real access logs: IPv6 clients, escaped quotes, `-` sizes,
//! extra trailing fields, per-line zones, HTTP/0.9 requests, Debian's vhost_combined.

use iowatt_trace::{parse_line, LineError, LogFormat};

fn combined() -> LogFormat {
    LogFormat::parse("combined").unwrap()
}

#[test]
fn a_combined_line_gives_every_field() {
    let line = r#"proxy-435.dialup.xtra.co.nz - - [22/Apr/2009:18:52:51 +1200] "GET /images/photos/455.jpg HTTP/1.1" 200 986 "-" "Mozilla/5.0 (Macintosh)""#;
    let r = parse_line(&combined(), line).unwrap();
    assert_eq!(r.host, "proxy-435.dialup.xtra.co.nz");
    assert_eq!(r.time, 1_240_383_171);
    assert_eq!(
        (r.method.as_ref(), r.target.as_ref()),
        ("GET", "/images/photos/455.jpg")
    );
    assert_eq!(
        (r.protocol.as_ref(), r.status, r.bytes),
        ("HTTP/1.1", 200, Some(986))
    );
    assert_eq!(r.referer.as_deref(), Some("-"));
    assert_eq!(r.agent.as_deref(), Some("Mozilla/5.0 (Macintosh)"));
}

#[test]
fn extra_trailing_fields_are_ignored() {
    // logstalgia's example log has one more quoted field after the user agent.
    let line = r#"dyn-530.optus.com.au - - [22/Apr/2009:18:52:51 +1200] "GET /a.jpg HTTP/1.1" 200 244 "-" "Mozilla/4.0" "-""#;
    assert_eq!(parse_line(&combined(), line).unwrap().bytes, Some(244));
}

#[test]
fn ipv6_clients_dash_sizes_and_escaped_quotes() {
    let line = r#"2001:db8::1 - alice [01/Jan/2024:00:00:00 +0000] "GET /q?x=\"ab\"&y=\\ HTTP/1.1" 304 - "http://r/\"x\"" "agent \"quoted\"""#;
    let r = parse_line(&combined(), line).unwrap();
    assert_eq!(r.host, "2001:db8::1");
    assert_eq!(r.target, r#"/q?x="ab"&y=\"#);
    assert_eq!((r.status, r.bytes), (304, None));
    assert_eq!(r.referer.as_deref(), Some(r#"http://r/"x""#));
    assert_eq!(r.agent.as_deref(), Some(r#"agent "quoted""#));
    // The spans are of the text as written, for an anonymiser to replace.
    assert_eq!(&line[r.host_span.clone()], "2001:db8::1");
    assert_eq!(&line[r.target_span.clone()], r#"/q?x=\"ab\"&y=\\"#);
}

#[test]
fn each_line_keeps_its_own_zone() {
    let f = LogFormat::parse("common").unwrap();
    // Central Europe's clocks jump from 02:00 +0100 to 03:00 +0200: one second apart.
    let winter = parse_line(
        &f,
        r#"h - - [29/Mar/2026:01:59:59 +0100] "GET / HTTP/1.0" 200 1"#,
    );
    let summer = parse_line(
        &f,
        r#"h - - [29/Mar/2026:03:00:00 +0200] "GET / HTTP/1.0" 200 1"#,
    );
    assert_eq!(summer.unwrap().time - winter.unwrap().time, 1);
}

#[test]
fn an_http_0_9_request_has_no_protocol() {
    let f = LogFormat::parse("common").unwrap();
    let r = parse_line(
        &f,
        r#"h - - [01/Jan/2024:00:00:00 +0000] "GET /old" 200 10"#,
    )
    .unwrap();
    assert_eq!((r.target.as_ref(), r.protocol.as_ref()), ("/old", ""));
}

#[test]
fn debian_vhost_combined() {
    let f = LogFormat::parse("vhost_combined").unwrap();
    let line = r#"www.example.org:443 192.0.2.7 - - [01/Jan/2024:12:00:00 +0100] "POST /login HTTP/2.0" 302 512 "-" "curl/8""#;
    let r = parse_line(&f, line).unwrap();
    assert_eq!(r.vhost.as_deref(), Some("www.example.org"));
    assert_eq!(
        (r.host.as_ref(), r.method.as_ref(), r.status),
        ("192.0.2.7", "POST", 302)
    );
}

#[test]
fn a_custom_format_with_skipped_directives() {
    let f = LogFormat::parse(r#"%a %t "%r" %>s %B %D "%{X-Forwarded-For}i""#).unwrap();
    let r = parse_line(
        &f,
        r#"10.0.0.1 [01/Jan/2024:00:00:01 +0000] "HEAD /h HTTP/1.1" 200 0 1534 "-""#,
    )
    .unwrap();
    assert_eq!(
        (r.method.as_ref(), r.bytes, r.time),
        ("HEAD", Some(0), 1_704_067_201)
    );
}

#[test]
fn broken_lines_say_what_and_where() {
    let f = combined();
    let cases = [
        (
            r#"h - - 01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-""#,
            LineError::Time(7),
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "\x16\x03\x01" 400 0 "-" "-""#,
            LineError::Request(37),
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 2000 1 "-" "-""#,
            LineError::Status(53),
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 lots "-" "-""#,
            LineError::Bytes(57),
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1 200 1"#,
            LineError::Unclosed(37),
        ),
        (
            "",
            LineError::Literal {
                expected: " ".into(),
                column: 1,
            },
        ),
    ];
    for (line, want) in cases {
        assert_eq!(parse_line(&f, line), Err(want), "{line}");
    }
}

/// Debian's logstalgia package ships a real Combined log (GPL: read where it lies, never
/// copied here); `.ci/run` installs it.
const LOGSTALGIA_EXAMPLE: &str = "/usr/share/logstalgia/example.log";

#[test]
fn every_line_of_logstalgias_example_log_parses() {
    let text = std::fs::read_to_string(LOGSTALGIA_EXAMPLE)
        .expect("install Debian's logstalgia package (README: the packages the tests need)");
    let f = combined();
    let records: Vec<_> = text.lines().map(|l| parse_line(&f, l)).collect();
    assert_eq!(records.len(), 3260);
    let bad: Vec<_> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_err())
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    let times: Vec<i64> = records.iter().map(|r| r.as_ref().unwrap().time).collect();
    // 22/Apr/2009 18:52:51 to 18:56:51 +1200: the log spans 241 seconds.
    assert_eq!(
        times.iter().max().unwrap() - times.iter().min().unwrap(),
        240
    );
}
