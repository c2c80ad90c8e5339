//! Date and time builtins on the integer encodings of [`crate::value`]:
//! `@date @date_year @date_month @date_day @time @time_hour @time_minute @time_second
//! @time_mill @datetime_add @datetime_sub @datetime_diff`.
//!
//! Extractors compute i64; `cpu::call_builtin` gives them the rules' type (i16, as
//! HorsePower's `date.md` and rNdN type them). `@datetime_add(x, n, unit)`
//! shifts by `n` units (`` `year `month `day `hour `minute `second `mill ``): years and
//! months move the calendar date and clamp the day to the month's end (2000-01-31 plus one
//! month is 2000-02-29); time-of-day types (`minute second time`) wrap around midnight; a
//! date, month or dt that would leave years 0000–9999 is an error.
//! `@datetime_diff(x, y)` is `y - x` in the unit of their (equal) type (i32, or i64 for dt).

use std::sync::Arc;

use super::arith::temporal_i64s;
use super::elementwise::{try_zip_with, zip_with};
use crate::bail;
use crate::builtin::Builtin;
use crate::error::{Result, RuntimeError};
use crate::temporal::{civil_from_days, month_from_code};
use crate::types::Type;
use crate::value::Vector;

const DAY_MS: i64 = 86_400_000;

/// Milliseconds since midnight of a time-of-day or datetime vector.
fn millis_of_day(v: &Vector) -> Result<Vec<i64>> {
    Ok(match v {
        Vector::Dt(x) => x.iter().map(|&ms| ms.rem_euclid(DAY_MS)).collect(),
        Vector::Time(x) => x.iter().map(|&ms| i64::from(ms)).collect(),
        Vector::Second(x) => x.iter().map(|&s| i64::from(s) * 1000).collect(),
        Vector::Minute(x) => x.iter().map(|&m| i64::from(m) * 60_000).collect(),
        other => bail!("expected a time or datetime, got {}", other.ty()),
    })
}

/// Calendar `(year, month, day)` of each element of a date, month or datetime vector (a
/// month's day is 1).
fn civil_dates(v: &Vector) -> Result<Vec<(i32, u32, u32)>> {
    Ok(match v {
        Vector::Date(x) => x.iter().map(|&d| civil_from_days(d)).collect(),
        Vector::Month(x) => x
            .iter()
            .map(|&m| {
                let (y, mo) = month_from_code(m);
                (y, mo, 1)
            })
            .collect(),
        Vector::Dt(x) => x
            .iter()
            .map(|&ms| civil_from_days(clamp_i32(ms.div_euclid(DAY_MS))))
            .collect(),
        other => bail!("expected a date, month or datetime, got {}", other.ty()),
    })
}

fn clamp_i32(x: i64) -> i32 {
    x.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// `@date @date_year @date_month @date_day @time @time_hour @time_minute @time_second
/// @time_mill`.
pub(crate) fn extract(b: Builtin, v: &Vector) -> Result<Vector> {
    Ok(match b {
        Builtin::Date => match v {
            Vector::Dt(x) => Vector::Date(Arc::new(
                x.iter()
                    .map(|&ms| clamp_i32(ms.div_euclid(DAY_MS)))
                    .collect(),
            )),
            Vector::Date(_) => v.clone(),
            other => bail!("expected a datetime, got {}", other.ty()),
        },
        Builtin::Time => match v {
            Vector::Dt(x) => Vector::Time(Arc::new(
                x.iter().map(|&ms| ms.rem_euclid(DAY_MS) as i32).collect(),
            )),
            Vector::Time(_) => v.clone(),
            other => bail!("expected a datetime, got {}", other.ty()),
        },
        Builtin::DateYear => {
            Vector::from_i64s(civil_dates(v)?.iter().map(|d| i64::from(d.0)).collect())
        }
        Builtin::DateMonth => {
            Vector::from_i64s(civil_dates(v)?.iter().map(|d| i64::from(d.1)).collect())
        }
        Builtin::DateDay => {
            if matches!(v, Vector::Month(_)) {
                bail!("a month has no day");
            }
            Vector::from_i64s(civil_dates(v)?.iter().map(|d| i64::from(d.2)).collect())
        }
        Builtin::TimeHour => {
            Vector::from_i64s(millis_of_day(v)?.iter().map(|ms| ms / 3_600_000).collect())
        }
        Builtin::TimeMinute => Vector::from_i64s(
            millis_of_day(v)?
                .iter()
                .map(|ms| ms / 60_000 % 60)
                .collect(),
        ),
        Builtin::TimeSecond => {
            Vector::from_i64s(millis_of_day(v)?.iter().map(|ms| ms / 1000 % 60).collect())
        }
        Builtin::TimeMill => {
            Vector::from_i64s(millis_of_day(v)?.iter().map(|ms| ms % 1000).collect())
        }
        other => bail!("@{other} is not a date or time extractor"),
    })
}

/// A unit of `@datetime_add`/`@datetime_sub`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Mill,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Year => "year",
            Unit::Month => "month",
            Unit::Day => "day",
            Unit::Hour => "hour",
            Unit::Minute => "minute",
            Unit::Second => "second",
            Unit::Mill => "mill",
        }
    }
}

fn unit_of(v: &Vector) -> Result<Unit> {
    let Some(strings) = v.as_strings().filter(|s| s.len() == 1) else {
        bail!(
            "the unit must be one symbol (`year, `month, `day, `hour, `minute, `second or `mill)"
        );
    };
    Ok(match strings.get(0) {
        "year" => Unit::Year,
        "month" => Unit::Month,
        "day" => Unit::Day,
        "hour" => Unit::Hour,
        "minute" => Unit::Minute,
        "second" => Unit::Second,
        "mill" => Unit::Mill,
        other => bail!("unknown unit `{other}`"),
    })
}

/// Milliseconds in one `unit` (for units of fixed length).
fn unit_ms(unit: Unit) -> Option<i64> {
    Some(match unit {
        Unit::Day => DAY_MS,
        Unit::Hour => 3_600_000,
        Unit::Minute => 60_000,
        Unit::Second => 1000,
        Unit::Mill => 1,
        Unit::Year | Unit::Month => return None,
    })
}

/// `@datetime_add` and `@datetime_sub`.
///
/// A result outside the calendar range ([`crate::temporal::calendar_range`]) is an error
/// naming the value, the amount and the unit; time-of-day types wrap around midnight.
pub(crate) fn shift(b: Builtin, x: &Vector, n: &Vector, unit: &Vector) -> Result<Vector> {
    let unit = unit_of(unit)?;
    let Some(amounts) = n.to_i64s() else {
        bail!("the amount must be an integer, got {}", n.ty());
    };
    let sign: i64 = if b == Builtin::DatetimeSub { -1 } else { 1 };
    let values = temporal_i64s(x)?;
    let ty = x.ty();
    let months = match unit {
        Unit::Year => Some(12i64),
        Unit::Month => Some(1),
        _ => None,
    };
    // The length of one unit in the type's own encoding unit.
    let type_unit_ms = match ty {
        Type::Date => DAY_MS,
        Type::Minute => 60_000,
        Type::Second => 1000,
        _ => 1,
    };
    let minus = sign < 0;
    // Dates, months and dts, element by element as the GPU engine names a failing one.
    let calendar = |v: i64, k: i64| {
        crate::temporal::datetime_shift(&ty, unit.name(), v, k, minus).map_err(RuntimeError::new)
    };
    let shifted: Vec<i64> = match (months, &ty) {
        (Some(_), Type::Month | Type::Date | Type::Dt) => {
            try_zip_with(&values, &amounts, calendar)?
        }
        (Some(_), _) => bail!("cannot shift a {ty} by months or years"),
        (None, Type::Month) => bail!("cannot shift a month by a unit shorter than a month"),
        (None, _) => {
            let step_ms = unit_ms(unit).unwrap_or(1);
            if step_ms % type_unit_ms != 0 {
                bail!("cannot shift a {ty} by a unit shorter than its resolution");
            }
            let step = step_ms / type_unit_ms;
            let day = DAY_MS / type_unit_ms;
            let wraps = matches!(ty, Type::Minute | Type::Second | Type::Time);
            if wraps {
                // Only the amount modulo one day matters: no overflow is possible.
                zip_with(&values, &amounts, |v, k| {
                    let k = (k.rem_euclid(day) * step).rem_euclid(day);
                    (v + sign * k).rem_euclid(day)
                })?
            } else {
                try_zip_with(&values, &amounts, calendar)?
            }
        }
    };
    // Every value was checked against its type's range, so it fits the encoding.
    let narrow = |v: Vec<i64>| Arc::new(v.into_iter().map(|e| e as i32).collect::<Vec<i32>>());
    Ok(match ty {
        Type::Month => Vector::Month(narrow(shifted)),
        Type::Date => Vector::Date(narrow(shifted)),
        Type::Minute => Vector::Minute(narrow(shifted)),
        Type::Second => Vector::Second(narrow(shifted)),
        Type::Time => Vector::Time(narrow(shifted)),
        _ => Vector::Dt(Arc::new(shifted)),
    })
}

/// `@datetime_diff(x, y)`: `y - x` in the unit of their type.
pub(crate) fn diff(x: &Vector, y: &Vector) -> Result<Vector> {
    if x.ty() != y.ty() {
        bail!("cannot subtract {} from {}", x.ty(), y.ty());
    }
    let (a, c) = (temporal_i64s(x)?, temporal_i64s(y)?);
    Ok(Vector::from_i64s(zip_with(&a, &c, |p, q| {
        q.wrapping_sub(p)
    })?))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::builtin::Builtin as B;
    use crate::temporal::days_from_civil;
    use crate::value::{Value, Vector};
    use std::sync::Arc;

    fn dt(v: &[i64]) -> Value {
        Value::Vector(Vector::Dt(Arc::new(v.to_vec())))
    }

    #[test]
    fn extracts_calendar_fields() {
        let d = dates(&[days_from_civil(1998, 9, 2), days_from_civil(1992, 2, 29)]);
        assert_eq!(
            run(B::DateYear, std::slice::from_ref(&d)).unwrap(),
            i16s(&[1998, 1992])
        );
        assert_eq!(
            run(B::DateMonth, std::slice::from_ref(&d)).unwrap(),
            i16s(&[9, 2])
        );
        assert_eq!(run(B::DateDay, &[d]).unwrap(), i16s(&[2, 29]));
        assert!(run(B::DateYear, &[i32s(&[1])]).is_err());
    }

    #[test]
    fn splits_datetimes_into_date_and_time() {
        // 2011-03-15T15:12:57.001
        let ms = i64::from(days_from_civil(2011, 3, 15)) * 86_400_000
            + ((15 * 60 + 12) * 60 + 57) * 1000
            + 1;
        let v = dt(&[ms]);
        assert_eq!(
            run(B::Date, std::slice::from_ref(&v)).unwrap(),
            dates(&[days_from_civil(2011, 3, 15)])
        );
        assert_eq!(
            run(B::TimeHour, std::slice::from_ref(&v)).unwrap(),
            i16s(&[15])
        );
        assert_eq!(
            run(B::TimeMinute, std::slice::from_ref(&v)).unwrap(),
            i16s(&[12])
        );
        assert_eq!(
            run(B::TimeSecond, std::slice::from_ref(&v)).unwrap(),
            i16s(&[57])
        );
        assert_eq!(run(B::TimeMill, &[v]).unwrap(), i16s(&[1]));
    }

    #[test]
    fn adds_calendar_units_clamping_the_day() {
        let jan31 = dates(&[days_from_civil(2000, 1, 31)]);
        let feb29 = dates(&[days_from_civil(2000, 2, 29)]);
        assert_eq!(
            run(
                B::DatetimeAdd,
                &[jan31.clone(), i64s(&[1]), syms(&["month"])]
            )
            .unwrap(),
            feb29
        );
        let next_year = dates(&[days_from_civil(2001, 1, 31)]);
        assert_eq!(
            run(
                B::DatetimeAdd,
                &[jan31.clone(), i32s(&[1]), syms(&["year"])]
            )
            .unwrap(),
            next_year
        );
        assert_eq!(
            run(B::DatetimeSub, &[next_year, i32s(&[366]), syms(&["day"])]).unwrap(),
            jan31.clone()
        );
        assert!(run(
            B::DatetimeAdd,
            &[jan31.clone(), i32s(&[1]), syms(&["hour"])]
        )
        .is_err());
        assert!(run(B::DatetimeAdd, &[jan31, i32s(&[1]), syms(&["fortnight"])]).is_err());
    }

    #[test]
    fn diff_is_second_minus_first() {
        assert_eq!(
            run(B::DatetimeDiff, &[dates(&[15]), dates(&[16])]).unwrap(),
            i32s(&[1])
        );
        assert!(run(B::DatetimeDiff, &[dates(&[15]), i32s(&[16])]).is_err());
    }

    #[test]
    fn shifting_out_of_the_calendar_is_an_error_naming_the_value() {
        let day = dates(&[days_from_civil(1998, 9, 2)]);
        let err = run(
            B::DatetimeAdd,
            &[day.clone(), i64s(&[999_999_999_999]), syms(&["day"])],
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "@datetime_add: 1998-09-02:date plus 999999999999 day is outside the date range \
             0000-01-01 to 9999-12-31"
        );
        let months = run(
            B::DatetimeSub,
            &[day.clone(), i64s(&[i64::MAX]), syms(&["month"])],
        );
        assert!(months.is_err());
        let years = run(
            B::DatetimeAdd,
            &[day.clone(), i64s(&[8002]), syms(&["year"])],
        );
        assert!(years.is_err());
        let last = run(B::DatetimeAdd, &[day, i64s(&[8001]), syms(&["year"])]).unwrap();
        assert_eq!(last, dates(&[days_from_civil(9999, 9, 2)]));
        let noon = Value::Vector(Vector::Time(Arc::new(vec![43_200_000])));
        let wrapped = run(B::DatetimeAdd, &[noon, i64s(&[i64::MAX]), syms(&["mill"])]);
        assert!(wrapped.is_ok(), "times of day wrap: {wrapped:?}");
    }
}
