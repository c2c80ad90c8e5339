//! Calendar arithmetic for the integer encodings of `date`, `month` and `dt`
//! (see [`crate::value`]). Proleptic Gregorian calendar, as SQL uses.

use crate::types::Type;

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

/// The first and last years a `date`, `month` or `dt` may hold: the years a literal can
/// write (`YYYY`) and SQL's range. Calendar arithmetic that leaves them is an error, never a
/// wrapped or clamped value.
pub const MIN_YEAR: i32 = 0;
pub const MAX_YEAR: i32 = 9999;

const DAY_MS: i64 = 86_400_000;

/// The calendar range, in the encoding of `ty` (`date` days, `month` codes, `dt`
/// milliseconds); `None` for the time-of-day types, which have no calendar range.
pub fn calendar_range(ty: &Type) -> Option<(i64, i64)> {
    let first_day = i64::from(days_from_civil(MIN_YEAR, 1, 1));
    let last_day = i64::from(days_from_civil(MAX_YEAR, 12, 31));
    Some(match ty {
        Type::Date => (first_day, last_day),
        Type::Month => (
            i64::from(month_code(MIN_YEAR, 1)),
            i64::from(month_code(MAX_YEAR, 12)),
        ),
        Type::Dt => (first_day * DAY_MS, (last_day + 1) * DAY_MS - 1),
        _ => return None,
    })
}

/// `value` (in the encoding of `ty`) when it lies in the calendar range of `ty`; an error
/// naming the range otherwise. Time-of-day types pass when they fit their i32 encoding.
pub fn check_calendar(ty: &Type, value: i64) -> Result<i64, String> {
    match calendar_range(ty) {
        Some((lo, hi)) if value < lo || value > hi => Err(format!(
            "the result is outside the {ty} range {}-01-01 to {}-12-31",
            format_year(MIN_YEAR),
            format_year(MAX_YEAR)
        )),
        None if *ty != Type::Dt && i32::try_from(value).is_err() => {
            Err(format!("the result does not fit a {ty}"))
        }
        _ => Ok(value),
    }
}

/// `value` (of temporal type `ty`) plus `amount`, or minus it, checked against the range of
/// `ty`; the error names the value and the amount as written (`1996-01-02:date plus
/// 9223372036854775807: the result overflows`). Both backends report a shift with it (the
/// GPU engine from the operands a kernel recorded).
pub fn shift(ty: &Type, value: i64, amount: i64, minus: bool) -> Result<i64, String> {
    let signed = if minus {
        amount.checked_neg()
    } else {
        Some(amount)
    };
    signed
        .and_then(|a| value.checked_add(a))
        .ok_or_else(|| "the result overflows".to_string())
        .and_then(|r| check_calendar(ty, r))
        .map_err(|why| {
            format!(
                "{} {} {amount}: {why}",
                describe_temporal(ty, value),
                if minus { "minus" } else { "plus" }
            )
        })
}

/// The length of a `@datetime_add`/`@datetime_sub` unit: a count of months (`year`,
/// `month`) or of milliseconds (`day` to `mill`); None for another name.
pub fn datetime_unit(unit: &str) -> Option<DatetimeUnit> {
    Some(match unit {
        "year" => DatetimeUnit::Months(12),
        "month" => DatetimeUnit::Months(1),
        "day" => DatetimeUnit::Millis(DAY_MS),
        "hour" => DatetimeUnit::Millis(3_600_000),
        "minute" => DatetimeUnit::Millis(60_000),
        "second" => DatetimeUnit::Millis(1000),
        "mill" => DatetimeUnit::Millis(1),
        _ => return None,
    })
}

/// See [`datetime_unit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatetimeUnit {
    Months(i64),
    Millis(i64),
}

/// Adds `months` to a day count, clamping the day to the end of the target month; `None`
/// when the day count is not an i32 or the year leaves the calendar range.
pub fn add_months_to_days(days: i64, months: i64) -> Option<i64> {
    let (y, m, d) = civil_from_days(i32::try_from(days).ok()?);
    let total = (i64::from(y) * 12 + i64::from(m) - 1).checked_add(months)?;
    let year = i32::try_from(total.div_euclid(12)).ok()?;
    if !(MIN_YEAR..=MAX_YEAR).contains(&year) {
        return None;
    }
    let month = total.rem_euclid(12) as u32 + 1;
    Some(i64::from(days_from_civil(
        year,
        month,
        d.min(days_in_month(year, month)),
    )))
}

/// One element of `@datetime_add(value, amount, unit)` (or `@datetime_sub`) of a `date`,
/// `month` or `dt`: years and months move the calendar date and clamp the day to the
/// month's end; a unit of fixed length moves the value by whole units of its encoding. A
/// result outside the calendar range is an error naming the value, the amount and the unit
/// (the message after `@datetime_add: `); so is a unit the type cannot move by (a `month` by
/// days, a `date` by hours). Both backends compute it with this function (the GPU engine for
/// the first element a kernel recorded as failing).
pub fn datetime_shift(
    ty: &Type,
    unit: &str,
    value: i64,
    amount: i64,
    minus: bool,
) -> Result<i64, String> {
    let sign: i64 = if minus { -1 } else { 1 };
    let out_of_range = || {
        format!(
            "{} {} {amount} {unit} is outside the {ty} range {MIN_YEAR:04}-01-01 to {MAX_YEAR}-12-31",
            describe_temporal(ty, value),
            if minus { "minus" } else { "plus" },
        )
    };
    let step = datetime_unit(unit).ok_or_else(|| format!("unknown unit `{unit}`"))?;
    match (step, ty) {
        (DatetimeUnit::Months(per), Type::Month) => per
            .checked_mul(amount)
            .and_then(|m| m.checked_mul(sign))
            .and_then(|m| value.checked_add(m))
            .filter(|&r| check_calendar(ty, r).is_ok())
            .ok_or_else(out_of_range),
        (DatetimeUnit::Months(per), Type::Date) => per
            .checked_mul(amount)
            .and_then(|m| m.checked_mul(sign))
            .and_then(|m| add_months_to_days(value, m))
            .ok_or_else(out_of_range),
        (DatetimeUnit::Months(per), Type::Dt) => {
            let (days, ms) = (value.div_euclid(DAY_MS), value.rem_euclid(DAY_MS));
            per.checked_mul(amount)
                .and_then(|m| m.checked_mul(sign))
                .and_then(|m| add_months_to_days(days, m))
                .map(|d| d * DAY_MS + ms)
                .ok_or_else(out_of_range)
        }
        (DatetimeUnit::Millis(unit_ms), Type::Date | Type::Dt) => {
            let resolution = if *ty == Type::Date { DAY_MS } else { 1 };
            if unit_ms % resolution != 0 {
                return Err(format!(
                    "cannot shift a {ty} by a unit shorter than its resolution"
                ));
            }
            (unit_ms / resolution)
                .checked_mul(amount)
                .and_then(|d| d.checked_mul(sign))
                .and_then(|d| value.checked_add(d))
                .filter(|&r| check_calendar(ty, r).is_ok())
                .ok_or_else(out_of_range)
        }
        (DatetimeUnit::Months(_), _) => Err(format!("cannot shift a {ty} by months or years")),
        (DatetimeUnit::Millis(_), Type::Month) => {
            Err("cannot shift a month by a unit shorter than a month".to_string())
        }
        _ => Err(format!("cannot shift a {ty} with a calendar range check")),
    }
}

fn format_year(y: i32) -> String {
    format!("{y:04}")
}

/// A value of a temporal type written as a literal of it (`1998-09-02:date`), for messages.
pub fn describe_temporal(ty: &Type, value: i64) -> String {
    let text = match ty {
        Type::Date => match i32::try_from(value) {
            Ok(days) => format_date(days),
            Err(_) => value.to_string(),
        },
        Type::Month => match i32::try_from(value) {
            Ok(code) => {
                let (y, m) = month_from_code(code);
                format!("{y:04}-{m:02}")
            }
            Err(_) => value.to_string(),
        },
        Type::Dt => {
            let (days, ms) = (value.div_euclid(DAY_MS), value.rem_euclid(DAY_MS));
            match i32::try_from(days) {
                Ok(days) => format!(
                    "{}T{:02}:{:02}:{:02}.{:03}",
                    format_date(days),
                    ms / 3_600_000,
                    ms / 60_000 % 60,
                    ms / 1000 % 60,
                    ms % 1000
                ),
                Err(_) => value.to_string(),
            }
        }
        _ => value.to_string(),
    };
    format!("{text}:{ty}")
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

    #[test]
    fn the_calendar_range_is_the_years_a_literal_can_write() {
        let (first, last) = calendar_range(&Type::Date).unwrap();
        assert_eq!(format_date(first as i32), "0000-01-01");
        assert_eq!(format_date(last as i32), "9999-12-31");
        assert!(check_calendar(&Type::Date, last).is_ok());
        assert!(check_calendar(&Type::Date, last + 1).is_err());
        assert!(check_calendar(&Type::Dt, 0).is_ok());
        assert_eq!(
            describe_temporal(&Type::Date, i64::from(days_from_civil(1998, 9, 2))),
            "1998-09-02:date"
        );
    }
}
