//! `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] [ERROR rate]`: creates
//! an empty cuckoo filter; and the [`Creation`] every add command makes on a missing key,
//! propagated with each parameter spelled out so that a replica's own defaults never matter.
//!
//! `ERROR rate` (this module's) makes a filter whose false-positive rate stays at most `rate`
//! however far it grows (`filters::cuckoo::shape::Bound`): bucket size 4, 500 evictions and
//! expansion 2 unless told otherwise (BUCKETSIZE is refused with it).

use super::open;
use crate::error::{BfError, CfError};
use crate::glue::call::Call;
use crate::glue::key::Access;
use crate::parse::{is_option, once, unknown, value_of, Args};
use filters::cuckoo::shape::{BOUNDED_BUCKET_SIZE, MIN_BOUNDED_ERROR};
use filters::cuckoo::{buckets_for, Bound, Cuckoo, Params};

/// A bounded filter's eviction budget, unless MAXITERATIONS says.
const BOUNDED_MAX_ITERATIONS: u64 = 500;
/// A bounded filter's expansion, unless EXPANSION says.
const BOUNDED_EXPANSION: u64 = 2;

/// How a filter is made: its capacity and parameters, and a bounded error rate if asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Creation {
    pub capacity: u64,
    pub params: Params,
    pub bound: Option<Bound>,
}

impl Creation {
    /// The filter a missing key gets from an add: the `bf.cf-*` defaults (`capacity` instead of
    /// `bf.cf-initial-size` where CF.INSERT gives one).
    pub fn defaults(capacity: Option<u64>) -> Result<Creation, BfError> {
        let defaults = crate::config::cuckoo_defaults();
        let params = defaults.params();
        let capacity = capacity.unwrap_or(defaults.capacity);
        check_capacity(capacity, params.bucket_size)?;
        Ok(Creation {
            capacity,
            params,
            bound: None,
        })
    }

    /// The filter CF.INSERT with `ERROR rate` makes on a missing key: bounded, its capacity
    /// `capacity` or `bf.cf-initial-size`, the bounded defaults otherwise.
    pub fn bounded(capacity: Option<u64>, error: f64) -> Result<Creation, BfError> {
        let capacity = capacity.unwrap_or(crate::config::cuckoo_defaults().capacity);
        check_capacity(capacity, BOUNDED_BUCKET_SIZE)?;
        let params = Params::new(
            u64::from(BOUNDED_BUCKET_SIZE),
            BOUNDED_MAX_ITERATIONS,
            BOUNDED_EXPANSION,
        )
        .map_err(|_| BfError::Internal)?;
        Ok(Creation {
            capacity,
            params,
            bound: Some(bound_for(error)?),
        })
    }

    /// The filter, empty, refused past the call's size limit.
    pub fn build(&self, call: &Call) -> Result<Cuckoo, BfError> {
        let limit = call.size_limit();
        let buckets = buckets_for(self.capacity, self.params.bucket_size)
            .map_err(|err| BfError::from_filter(err, &limit))?;
        Cuckoo::new(buckets, self.params, self.bound, limit.bytes())
            .map_err(|err| BfError::from_filter(err, &limit))
    }

    /// Propagates the creation to replicas and the AOF as a CF.RESERVE with every parameter.
    pub fn propagate(&self, call: &Call) {
        let mut words = vec![self.capacity.to_string()];
        if self.bound.is_none() {
            words.extend(["BUCKETSIZE".into(), self.params.bucket_size.to_string()]);
        }
        words.extend([
            "MAXITERATIONS".into(),
            self.params.max_iterations.to_string(),
            "EXPANSION".into(),
            self.params.expansion.to_string(),
        ]);
        if let Some(bound) = self.bound {
            // The shortest text that parses back to the same f64.
            words.extend(["ERROR".into(), format!("{:?}", bound.error())]);
        }
        let mut made = vec![call.args().get(1)];
        made.extend(words.iter().map(|word| word.as_bytes()));
        call.replicate(c"CF.RESERVE", &made, 0..0);
        call.notify(c"cf.reserve", 1);
    }
}

/// A capacity of at least twice the bucket size (RedisBloom's rule: two buckets at least).
fn check_capacity(capacity: u64, bucket_size: u8) -> Result<(), BfError> {
    if capacity < 2 * u64::from(bucket_size) {
        return Err(BfError::Cf(CfError::CapacityTooSmall));
    }
    Ok(())
}

/// An `ERROR` rate: a number from 1e-12 up to, not including, 1.
pub fn parse_error(token: &[u8]) -> Result<f64, BfError> {
    std::str::from_utf8(token)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|error| (MIN_BOUNDED_ERROR..1.0).contains(error))
        .ok_or(BfError::Cf(CfError::BadErrorRate))
}

/// The bound of an error rate [`parse_error`] took.
fn bound_for(error: f64) -> Result<Bound, BfError> {
    Bound::for_error(error).map_err(|_| BfError::Cf(CfError::BadErrorRate))
}

/// A capacity as RedisBloom reads it: a whole number (a sign allowed, so that a negative one is
/// "too small" rather than unreadable), else `Bad capacity`.
pub fn parse_capacity(token: &[u8]) -> Result<i64, BfError> {
    std::str::from_utf8(token)
        .ok()
        .filter(|text| !text.starts_with('+'))
        .and_then(|text| text.parse::<i64>().ok())
        .ok_or(BfError::Cf(CfError::BadCapacity))
}

/// A capacity checked against the bucket size.
pub fn checked_capacity(capacity: i64, bucket_size: u8) -> Result<u64, BfError> {
    let capacity = u64::try_from(capacity).map_err(|_| BfError::Cf(CfError::CapacityTooSmall))?;
    check_capacity(capacity, bucket_size)?;
    Ok(capacity)
}

/// A number after `MAXITERATIONS`, `BUCKETSIZE` or `EXPANSION`, within `min..=max`; RedisBloom's
/// two errors otherwise.
fn bounded(
    token: &[u8],
    option: &'static str,
    min: u64,
    max: u64,
    range: CfError,
) -> Result<u64, BfError> {
    let value = std::str::from_utf8(token)
        .ok()
        .filter(|text| !text.starts_with('+'))
        .and_then(|text| text.parse::<i64>().ok())
        .ok_or(BfError::Cf(CfError::CannotParse(option)))?;
    u64::try_from(value)
        .ok()
        .filter(|value| (min..=max).contains(value))
        .ok_or(BfError::Cf(range))
}

/// A parsed CF.RESERVE.
#[derive(Debug, PartialEq)]
pub struct Reserve(pub Creation);

impl Reserve {
    /// Parses the arguments after the key, checked in RedisBloom's order: the capacity is a
    /// number, MAXITERATIONS, BUCKETSIZE, EXPANSION, then the capacity against the bucket size.
    pub fn parse<'a>(args: &impl Args<'a>) -> Result<Reserve, BfError> {
        let capacity = parse_capacity(args.get(2))?;
        let (mut bucket_size, mut max_iterations, mut expansion) = (None, None, None);
        let mut error = None;
        let mut index = 3;
        while index < args.len() {
            let token = args.get(index);
            let (slot, name) = if is_option(token, "BUCKETSIZE") {
                (&mut bucket_size, "BUCKETSIZE")
            } else if is_option(token, "MAXITERATIONS") {
                (&mut max_iterations, "MAXITERATIONS")
            } else if is_option(token, "EXPANSION") {
                (&mut expansion, "EXPANSION")
            } else if is_option(token, "ERROR") {
                (&mut error, "ERROR")
            } else {
                return Err(unknown(token));
            };
            once(slot, name, value_of(args, index, name)?)?;
            index += 2;
        }
        if let Some(error) = error {
            if bucket_size.is_some() {
                return Err(BfError::Cf(CfError::BucketSizeWithError));
            }
            let error = parse_error(error)?;
            let (max_iterations, expansion) = bounded_options(max_iterations, expansion)?;
            let params = Params::new(u64::from(BOUNDED_BUCKET_SIZE), max_iterations, expansion)
                .map_err(|_| BfError::Internal)?;
            let capacity = checked_capacity(capacity, BOUNDED_BUCKET_SIZE)?;
            let bound = Some(bound_for(error)?);
            return Ok(Reserve(Creation {
                capacity,
                params,
                bound,
            }));
        }
        let defaults = crate::config::cuckoo_defaults();
        let max_iterations = match max_iterations {
            Some(token) => bounded(
                token,
                "MAXITERATIONS",
                1,
                65535,
                CfError::MaxIterationsRange,
            )?,
            None => defaults.max_iterations,
        };
        let bucket_size = match bucket_size {
            Some(token) => bounded(token, "BUCKETSIZE", 1, 255, CfError::BucketSizeRange)?,
            None => defaults.bucket_size,
        };
        let expansion = match expansion {
            Some(token) => bounded(token, "EXPANSION", 0, 32768, CfError::ExpansionRange)?,
            None => defaults.expansion,
        };
        let params =
            Params::new(bucket_size, max_iterations, expansion).map_err(|_| BfError::Internal)?;
        let capacity = checked_capacity(capacity, params.bucket_size)?;
        Ok(Reserve(Creation {
            capacity,
            params,
            bound: None,
        }))
    }
}

/// MAXITERATIONS and EXPANSION of a bounded filter, or their bounded defaults.
fn bounded_options(
    max_iterations: Option<&[u8]>,
    expansion: Option<&[u8]>,
) -> Result<(u64, u64), BfError> {
    let max_iterations = match max_iterations {
        Some(token) => bounded(
            token,
            "MAXITERATIONS",
            1,
            65535,
            CfError::MaxIterationsRange,
        )?,
        None => BOUNDED_MAX_ITERATIONS,
    };
    let expansion = match expansion {
        Some(token) => bounded(token, "EXPANSION", 0, 32768, CfError::ExpansionRange)?,
        None => BOUNDED_EXPANSION,
    };
    Ok((max_iterations, expansion))
}

/// CF.RESERVE: `OK`, or `ERR item exists` if the key holds a cuckoo filter already.
pub fn reserve(call: &Call) -> Result<(), BfError> {
    let Reserve(creation) = Reserve::parse(&call.args())?;
    let mut key = open(call, Access::Write);
    if key.filter()?.is_some() {
        return Err(BfError::ItemExists);
    }
    let filter = creation.build(call)?;
    key.create(filter)?;
    call.reply_ok();
    creation.propagate(call);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Reserve, BfError> {
        let mut all: Vec<&[u8]> = vec![b"CF.RESERVE", b"key"];
        all.extend(args.iter().map(|a| a.as_bytes()));
        Reserve::parse(&all.as_slice())
    }

    #[test]
    fn options_in_any_order_and_letter_case_each_once() {
        let Reserve(creation) = parse(&["1000", "expansion", "3", "BucketSize", "4"]).unwrap();
        assert_eq!(creation.capacity, 1000);
        assert_eq!(creation.params.bucket_size, 4);
        assert_eq!(creation.params.expansion, 4);
        assert_eq!(creation.params.max_iterations, 20);
        let err = |args: &[&str]| parse(args).unwrap_err().to_string();
        assert_eq!(
            err(&["10", "EXPANSION", "1", "EXPANSION", "2"]),
            "ERR option EXPANSION given more than once"
        );
        assert_eq!(
            err(&["10", "EXPANSION"]),
            "ERR option EXPANSION needs a value"
        );
        assert_eq!(err(&["10", "FOO", "BAR"]), "ERR unknown argument 'FOO'");
        assert_eq!(err(&["abc"]), "ERR Bad capacity");
        assert_eq!(err(&["1e3"]), "ERR Bad capacity");
        assert_eq!(
            err(&["-1"]),
            "ERR Capacity must be at least (BucketSize * 2)"
        );
        assert_eq!(
            err(&["3"]),
            "ERR Capacity must be at least (BucketSize * 2)"
        );
        // RedisBloom's order: MAXITERATIONS before BUCKETSIZE before EXPANSION, then capacity.
        assert_eq!(
            err(&[
                "1",
                "EXPANSION",
                "x",
                "BUCKETSIZE",
                "0",
                "MAXITERATIONS",
                "0"
            ]),
            "ERR MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."
        );
        assert_eq!(
            err(&["1", "EXPANSION", "x", "BUCKETSIZE", "256"]),
            "ERR BUCKETSIZE: value must be an integer between 1 and 255, inclusive."
        );
        assert_eq!(
            err(&["1", "EXPANSION", "x"]),
            "ERR Couldn't parse EXPANSION"
        );
        assert_eq!(
            err(&["1", "EXPANSION", "32769"]),
            "ERR EXPANSION: value must be an integer between 0 and 32768, inclusive."
        );
    }
}
