//! The cmd source: a command run at every poll that prints watts.

use iowatt_power::sources::cmd;
use iowatt_power::{PowerError, Unit};
use serde_json::json;

use crate::support::{config, expect_err, poll};

fn source(argv: &[&str], timeout_s: f64) -> serde_json::Value {
    json!({"name": "plug", "hz": 1.0, "kind": "cmd", "argv": argv, "timeout_s": timeout_s})
}

#[test]
fn the_first_number_printed_is_the_reading() {
    let mut s = cmd::open(&config(source(&["sh", "-c", "echo 12.5 W"], 5.0)), (0, 0)).unwrap();
    let c = &s.channels()[0];
    assert_eq!(
        (
            c.source.as_str(),
            c.channel.as_str(),
            c.unit,
            c.scope.as_str()
        ),
        ("plug", "plug", Unit::Watts, "cmd")
    );
    let readings = poll(s.as_mut());
    assert_eq!(readings.len(), 1);
    assert_eq!((readings[0].channel, readings[0].value), (0, 12.5));
    let mut s = cmd::open(&config(source(&["echo", "W=7.25"], 5.0)), (0, 0)).unwrap();
    assert_eq!(poll(s.as_mut())[0].value, 7.25);
}

#[test]
fn a_missing_command_is_unavailable() {
    let err = expect_err(cmd::open(
        &config(source(&["no-such-meter-tool", "-w"], 5.0)),
        (0, 0),
    ));
    assert!(matches!(err, PowerError::Unavailable { .. }), "{err:?}");
    assert_eq!(err.to_string(), "command `no-such-meter-tool` not found");
}

#[test]
fn output_without_a_number_is_invalid_and_shows_it() {
    let argv = ["sh", "-c", "echo power unknown"];
    let err = expect_err(cmd::open(&config(source(&argv, 5.0)), (0, 0)));
    assert!(matches!(err, PowerError::Invalid { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "command `sh -c 'echo power unknown'` printed no number: `power unknown`"
    );
}

#[test]
fn a_failing_or_hanging_command_is_an_error() {
    let argv = ["sh", "-c", "echo 'no plug found' >&2; exit 3"];
    let err = expect_err(cmd::open(&config(source(&argv, 5.0)), (0, 0)));
    assert!(matches!(err, PowerError::Unavailable { .. }), "{err:?}");
    assert!(
        err.to_string().ends_with("(exit status: 3): no plug found"),
        "{err}"
    );
    // Its child holds the pipe open: both are killed at the timeout.
    let argv = ["sh", "-c", "sleep 30 & sleep 30; echo 1"];
    let err = expect_err(cmd::open(&config(source(&argv, 0.2)), (0, 0)));
    assert!(
        err.to_string().contains("did not finish within 0.200 s"),
        "{err}"
    );
    let err = expect_err(cmd::open(&config(source(&[], 1.0)), (0, 0)));
    assert!(matches!(err, PowerError::Invalid { .. }));
}
