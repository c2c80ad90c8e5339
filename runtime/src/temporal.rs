//! Calendar arithmetic for the integer encodings of `date`, `month` and `dt`
//! (see [`crate::value`]). Proleptic Gregorian calendar, as SQL uses.

/// Days since 1970-01-01 of the civil date `year-month-day` (month 1–12, day 1–31).
pub fn days_from_civil(year: i32, month: u32, day: u32) -> i32 {
    // Howard Hinnant's algorithm: shift the year to start in March so leap days come last.
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468) as i32
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(days: i32) -> (i32, u32, u32) {
    let z = i64::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

/// Number of days in `month` of `year`.
pub fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 0,
    }
}

/// The `month` encoding of `year-month`.
pub fn month_code(year: i32, month: u32) -> i32 {
    year * 12 + month as i32 - 1
}

/// `(year, month)` of a `month` code.
pub fn month_from_code(code: i32) -> (i32, u32) {
    (code.div_euclid(12), code.rem_euclid(12) as u32 + 1)
}

/// Formats a `date` value as `YYYY-MM-DD`.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_tpch_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1998, 12, 1), 10_561);
        assert_eq!(civil_from_days(10_561), (1998, 12, 1));
        assert_eq!(format_date(days_from_civil(1992, 2, 29)), "1992-02-29");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn round_trips_every_day_of_four_centuries() {
        for d in -146_097..146_097 {
            let (y, m, day) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, day), d);
            assert!(day >= 1 && day <= days_in_month(y, m));
        }
    }
}
