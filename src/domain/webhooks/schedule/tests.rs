//! The retry schedule: the default waits, the settings refused, the wait after each failed
//! attempt with and without a receiver's `Retry-After`, and that header's two forms.

use chrono::TimeZone;

use super::*;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 4, 12, 0, 0).unwrap()
}

#[test]
fn the_default_waits_5s_5min_30min_2h_5h_10h_10h() {
    let s = RetrySchedule::default();
    let waits: Vec<_> = (1..=7).map(|n| s.after(n, None).unwrap()).collect();
    assert_eq!(
        waits,
        [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000].map(secs)
    );
    assert_eq!(s.attempts(), 8);
}

#[test]
fn no_retry_is_left_after_the_last_attempt() {
    let s = RetrySchedule::default();
    assert_eq!(s.after(8, None), None);
    assert_eq!(s.after(u32::MAX, Some(secs(1))), None);
}

#[test]
fn no_attempt_failed_means_no_wait() {
    assert_eq!(RetrySchedule::default().after(0, None), None);
}

#[test]
fn a_schedule_from_seconds_waits_as_given() {
    let s = RetrySchedule::from_secs(&[1, 60, 86_400]).unwrap();
    assert_eq!(s.attempts(), 4);
    assert_eq!(s.after(1, None), Some(secs(1)));
    assert_eq!(s.after(3, None), Some(secs(86_400)));
    assert_eq!(s.after(4, None), None);
    assert_eq!(RetrySchedule::from_secs(&[7; 20]).unwrap().attempts(), 21);
}

#[test]
fn a_schedule_of_no_waits_or_too_many_is_refused() {
    let err = RetrySchedule::from_secs(&[]).unwrap_err();
    assert!(
        err.contains("has 0 waits") && err.contains("1 to 20"),
        "{err}"
    );
    let err = RetrySchedule::from_secs(&[5; 21]).unwrap_err();
    assert!(err.contains("has 21 waits"), "{err}");
}

#[test]
fn a_wait_out_of_range_is_named() {
    let err = RetrySchedule::from_secs(&[5, 0, 10]).unwrap_err();
    assert!(err.contains("wait 2 is 0 seconds"), "{err}");
    let err = RetrySchedule::from_secs(&[5, 10, 86_401]).unwrap_err();
    assert!(err.contains("wait 3 is 86401 seconds"), "{err}");
}

#[test]
fn retry_after_lengthens_the_wait_but_never_shortens_it() {
    let s = RetrySchedule::default();
    assert_eq!(s.after(2, Some(secs(10))), Some(secs(300)));
    assert_eq!(s.after(2, Some(secs(900))), Some(secs(900)));
    assert_eq!(s.after(1, Some(Duration::ZERO)), Some(secs(5)));
}

#[test]
fn retry_after_is_capped_at_a_day() {
    let s = RetrySchedule::default();
    assert_eq!(s.after(1, Some(secs(10 * 86_400))), Some(MAX_RETRY_AFTER));
    assert_eq!(MAX_RETRY_AFTER, secs(86_400));
    let long = RetrySchedule::from_secs(&[86_400]).unwrap();
    assert_eq!(long.after(1, Some(secs(90_000))), Some(secs(86_400)));
}

#[test]
fn retry_after_in_seconds() {
    assert_eq!(parse_retry_after("120", now()), Some(secs(120)));
    assert_eq!(parse_retry_after("0", now()), Some(Duration::ZERO));
    assert_eq!(parse_retry_after(" 30 ", now()), Some(secs(30)));
    let huge = parse_retry_after("99999999999999999999999", now()).unwrap();
    assert!(huge > MAX_RETRY_AFTER);
}

#[test]
fn retry_after_as_an_http_date() {
    let later = parse_retry_after("Mon, 04 May 2026 12:02:30 GMT", now());
    assert_eq!(later, Some(secs(150)));
    let earlier = parse_retry_after("Mon, 04 May 2026 11:00:00 GMT", now());
    assert_eq!(earlier, Some(Duration::ZERO));
    // RFC 9110 asks recipients to accept the obsolete forms too.
    let rfc850 = parse_retry_after("Monday, 04-May-26 12:01:00 GMT", now());
    assert_eq!(rfc850, Some(secs(60)));
    let asctime = parse_retry_after("Mon May  4 12:00:10 2026", now());
    assert_eq!(asctime, Some(secs(10)));
}

#[test]
fn retry_after_garbage_is_none() {
    for bad in [
        "",
        "soon",
        "-5",
        "+5",
        "1.5",
        "12 seconds",
        "0x10",
        "Mon, 32 May 2026 12:00:00 GMT",
        "2026-05-04T12:02:30Z",
    ] {
        assert_eq!(parse_retry_after(bad, now()), None, "{bad:?}");
    }
}
