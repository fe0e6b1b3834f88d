//! CLF timestamps, `22/Apr/2009:18:52:51 +1200`, as seconds since the epoch (UTC): the zone
//! offset is per line, so a log that crosses a daylight-saving change stays in order.

use iowatt_metrics::calendar::{days_from_civil, days_in_month};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Seconds since 1970-01-01 UTC, or None when the text is not a valid CLF time.
pub fn parse_clf(text: &str) -> Option<i64> {
    parse_clf_zoned(text).map(|(time, _)| time)
}

/// Seconds since 1970-01-01 UTC and the line's zone offset in seconds east of UTC.
pub fn parse_clf_zoned(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[20] != b' ' {
        return None;
    }
    let day = number(&b[0..2])?;
    let month = MONTHS.iter().position(|m| m.as_bytes() == &b[3..6])? as i64 + 1;
    let year = number(&b[7..11])?;
    let (hour, minute, second) = (
        number(&b[12..14])?,
        number(&b[15..17])?,
        number(&b[18..20])?,
    );
    if b[14] != b':' || b[17] != b':' || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let sign = match b[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let offset = sign * (number(&b[22..24])? * 3600 + number(&b[24..26])? * 60);
    let days = days_from_civil(year, month, day);
    let time = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((time, i32::try_from(offset).ok()?))
}

fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zone_offset_is_applied() {
        // 2009-04-22 06:52:51 UTC, as `date -d '2009-04-22 18:52:51 +1200' +%s` prints it.
        assert_eq!(parse_clf("22/Apr/2009:18:52:51 +1200"), Some(1_240_383_171));
        assert_eq!(parse_clf("22/Apr/2009:06:52:51 +0000"), Some(1_240_383_171));
        assert_eq!(parse_clf("21/Apr/2009:23:22:51 -0730"), Some(1_240_383_171));
        assert_eq!(
            parse_clf_zoned("21/Apr/2009:23:22:51 -0730"),
            Some((1_240_383_171, -27_000))
        );
    }

    #[test]
    fn leap_days_and_the_epoch() {
        assert_eq!(parse_clf("01/Jan/1970:00:00:00 +0000"), Some(0));
        assert_eq!(parse_clf("29/Feb/2024:00:00:00 +0000"), Some(1_709_164_800));
        assert_eq!(parse_clf("29/Feb/2023:00:00:00 +0000"), None);
    }

    #[test]
    fn malformed_times_are_none() {
        for bad in [
            "22/Apx/2009:18:52:51 +1200",
            "22/Apr/2009:24:00:00 +0000",
            "22/Apr/2009 18:52:51 +1200",
            "22/Apr/2009:18:52:51 1200",
            "22/Apr/2009:18:52:51",
            "2a/Apr/2009:18:52:51 +1200",
        ] {
            assert_eq!(parse_clf(bad), None, "{bad}");
        }
    }
}
