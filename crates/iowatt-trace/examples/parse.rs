use iowatt_trace::{read_log, LogFormat};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let f = LogFormat::parse("combined").unwrap();
    let t = std::time::Instant::now();
    let p = read_log(std::path::Path::new(&path), &f).unwrap();
    eprintln!(
        "{} lines, {} bad, {} ooo in {:?}",
        p.lines,
        p.bad,
        p.out_of_order,
        t.elapsed()
    );
}
