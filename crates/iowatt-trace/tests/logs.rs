//! Whole logs: bad lines counted with their numbers, out-of-order lines sorted and counted,
//! gzip read like plain text.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use iowatt_trace::{parse_text, read_log, LogFormat};

const LOG: &str = r#"a - - [01/Jan/2024:00:00:02 +0000] "GET /2 HTTP/1.1" 200 20
a - - [01/Jan/2024:00:00:01 +0000] "GET /1 HTTP/1.1" 200 10
this is not a log line

b - - [01/Jan/2024:00:00:02 +0000] "GET /2b HTTP/1.1" 404 -
c - - [01/Jan/2024:00:00:00 +0000] "POST /0 HTTP/1.1" 201 0
"#;

fn common() -> LogFormat {
    LogFormat::parse("common").unwrap()
}

#[test]
fn requests_come_out_in_time_order_and_same_second_ones_in_log_order() {
    let p = parse_text(LOG, &common());
    assert_eq!(
        p.requests().target.iter().collect::<Vec<_>>(),
        ["/0", "/1", "/2", "/2b"]
    );
    assert_eq!(p.requests().line, [6, 2, 1, 5]);
    assert_eq!(p.requests().bytes, [0, 10, 20, -1]);
    assert_eq!(p.requests().status, [201, 200, 200, 404]);
    assert_eq!(p.out_of_order, 2); // lines 2 and 6 go back in time
}

#[test]
fn bad_lines_are_counted_with_their_number_and_blank_ones_skipped() {
    let p = parse_text(LOG, &common());
    assert_eq!((p.lines, p.bad), (6, 1));
    let reason = "the time at column 13 is not `[day/Mon/year:hh:mm:ss +zone]`";
    assert_eq!(p.bad_lines, [(3, reason.to_string())]);
}

#[test]
fn a_line_that_is_not_utf8_is_a_bad_line() {
    let mut bytes = LOG.as_bytes().to_vec();
    bytes.extend_from_slice(b"d - - [01/Jan/2024:00:00:03 +0000] \"GET /\xff HTTP/1.1\" 200 1\n");
    let p = iowatt_trace::parse_log(&bytes[..], &common(), 2).unwrap();
    assert_eq!(p.bad, 2);
    assert_eq!(p.bad_lines[1].0, 7);
    assert!(p.bad_lines[1].1.starts_with("not UTF-8"));
}

#[test]
fn a_gzip_log_reads_like_the_plain_one() {
    let dir = std::env::temp_dir().join(format!("iowatt-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (plain, gz) = (dir.join("access.log"), dir.join("access.log.gz"));
    std::fs::write(&plain, LOG).unwrap();
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(LOG.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let (a, b) = (read_log(&plain, &common()), read_log(&gz, &common()));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(a.unwrap().requests(), b.unwrap().requests());
}

#[test]
fn the_virtual_host_or_host_header_is_kept_per_request_and_empty_without_one() {
    let vhost = "www.a.org:80 1.2.3.4 - - [01/Jan/2024:00:00:01 +0000] \"GET /x HTTP/1.1\" 200 5 \"-\" \"-\"\nb.org:443 1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] \"GET /y HTTP/1.1\" 200 5 \"-\" \"-\"\n";
    let p = parse_text(vhost, &LogFormat::parse("vhost_combined").unwrap());
    assert_eq!(
        p.requests().vhost.iter().collect::<Vec<_>>(),
        ["b.org", "www.a.org"]
    );
    let header = "1.2.3.4 [01/Jan/2024:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5 \"c.org:8080\"\n";
    let p = parse_text(
        header,
        &LogFormat::parse("%h %t \"%r\" %>s %b \"%{Host}i\"").unwrap(),
    );
    assert_eq!(
        p.requests().vhost.iter().collect::<Vec<_>>(),
        ["c.org:8080"]
    );
    let p = parse_text(LOG, &common());
    assert!(p.requests().vhost.iter().all(str::is_empty));
}
