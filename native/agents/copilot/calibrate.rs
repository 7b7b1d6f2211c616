//! Calibration (its polars oracle: `tests/oracle/reference/calibrate.py`, `calibrate`): each call's
//! input, cache and output tokens from the fitted prompts, apportioned to the shutdown's exact
//! totals where a total covers the call (integer largest remainder, so every column sums to
//! its total), else the fit as it is with the provider's caching.
//!
//! A call to calibrate shares its shutdown total (session, segment, model) with the others of
//! its group: input in proportion to the fitted prompts; cache reads over the warm prefixes
//! (the previous call's cacheable part), any excess over the rest of the prompts; writes over
//! what each call does not read; reasoning in proportion to the stated outputs; output to the
//! calls without one by the size of their replies (or the whole total spread, where the calls
//! counted differ from the shutdown's requests). An open call no total covers keeps its fitted
//! prompt: Anthropic models (`claude-*`) write the new part to the cache, the others read the
//! previous prompt in blocks of `AUTO_CACHE_BLOCK` tokens. Integer arithmetic throughout.
#![forbid(unsafe_code)]

use rustc_hash::FxHashMap;

/// Automatic prompt caching reuses a prompt prefix in blocks of this size (tokens).
pub const AUTO_CACHE_BLOCK: i64 = 128;

/// One call as calibration reads it (rows in session and event order).
#[derive(Clone, Debug, Default)]
pub struct Row<'a> {
    pub session: &'a str,
    pub seq: i64,
    pub segment: Option<i64>,
    pub model: Option<&'a str>,
    /// The call has a per-call figure already (observed).
    pub observed: bool,
    /// A shutdown total covers it (`_apportion`).
    pub apportion: bool,
    /// The calls counted equal the shutdown's requests (`_sum_ok`).
    pub sum_ok: bool,
    pub estimate: i64,
    pub previous_prefix: Option<i64>,
    /// What the totals leave for the calls without a figure: input, cache read, cache write,
    /// reasoning, output.
    pub left: [Option<i64>; 5],
    pub total_output: Option<i64>,
    pub reply_bytes: i64,
    /// The call's own figures: input, cache read, cache write, reasoning, output.
    pub tokens: [Option<i64>; 5],
}

/// A call's figures after calibration: input, cache read, cache write, reasoning, output,
/// and where they come from (None: unchanged).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calibrated {
    pub tokens: [Option<i64>; 5],
    pub source: Option<&'static str>,
}

/// Integer shares of `total` in proportion to `weights` (largest remainder; ties to later
/// rows); weights summing to 0 share equally; a null total gives null shares.
pub fn apportion(total: Option<i64>, weights: &[i64]) -> Vec<Option<i64>> {
    let Some(total) = total else {
        return vec![None; weights.len()];
    };
    let sum: i128 = weights.iter().map(|&w| i128::from(w)).sum();
    let count = i128::try_from(weights.len()).unwrap_or(i128::MAX).max(1);
    let denominator = if sum > 0 { sum } else { count };
    let total = i128::from(total);
    // (divided in 64 bits where both numbers fit, the usual case: the same quotient and
    // remainder, without the 128-bit division's software routine)
    let small = i64::try_from(denominator).ok();
    let mut parts: Vec<(i128, i128)> = weights
        .iter()
        .map(|&w| {
            let w = if sum > 0 { i128::from(w) } else { 1 };
            let scaled = total.saturating_mul(w);
            match (small, i64::try_from(scaled)) {
                (Some(d), Ok(s)) => (i128::from(s.div_euclid(d)), i128::from(s.rem_euclid(d))),
                _ => (
                    scaled.div_euclid(denominator),
                    scaled.rem_euclid(denominator),
                ),
            }
        })
        .collect();
    let leftover = total - parts.iter().map(|p| p.0).sum::<i128>();
    // The `leftover` first by the largest remainder, then the later row, get one more: which
    // rows those are, not their order, decides the shares (no two rows rank alike, so a
    // selection finds them; with nothing left over, none).
    if leftover > 0 {
        let mut order: Vec<(i128, usize)> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| (denominator - p.1, usize::MAX - i))
            .collect();
        let take = usize::try_from(leftover)
            .unwrap_or(usize::MAX)
            .min(order.len());
        if take > 0 && take < order.len() {
            order.select_nth_unstable(take - 1);
        }
        for &(_, later) in order.iter().take(take) {
            if let Some(part) = parts.get_mut(usize::MAX - later) {
                part.0 += 1;
            }
        }
    }
    parts
        .into_iter()
        .map(|(share, _)| Some(i64::try_from(share).unwrap_or(i64::MAX)))
        .collect()
}

fn sum(values: impl Iterator<Item = i64>) -> i64 {
    values.fold(0, i64::saturating_add)
}

/// The shutdown total a call shares with others: session, segment, model.
type Total<'a> = (&'a str, Option<i64>, Option<&'a str>);

/// Calibrate every call (`rows` in session and event order; the result is aligned with it).
pub fn calibrate(rows: &[Row<'_>]) -> Vec<Calibrated> {
    let mut out: Vec<Calibrated> = rows
        .iter()
        .map(|r| Calibrated {
            tokens: r.tokens,
            source: None,
        })
        .collect();
    // The groups in the order first met (a run of one group's rows, the usual case, looks
    // its slot up once).
    let mut slots: FxHashMap<Total<'_>, usize> = FxHashMap::default();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut last: Option<(Total<'_>, usize)> = None;
    for (i, row) in rows.iter().enumerate() {
        if !row.observed && row.apportion {
            let key = (row.session, row.segment, row.model);
            let slot = match last {
                Some((k, slot)) if k == key => slot,
                _ => *slots.entry(key).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                }),
            };
            last = Some((key, slot));
            if let Some(members) = groups.get_mut(slot) {
                members.push(i);
            }
        } else if !row.observed {
            out[i] = estimated(row);
        }
    }
    for members in &groups {
        let group: Vec<&Row> = members.iter().filter_map(|&i| rows.get(i)).collect();
        for (i, figures) in members.iter().zip(scaled(&group)) {
            if let Some(slot) = out.get_mut(*i) {
                *slot = figures;
            }
        }
    }
    out
}

/// An open call no total covers: its fitted prompt, cached as its provider caches.
fn estimated(row: &Row<'_>) -> Calibrated {
    let input = row.estimate;
    let raw = row.previous_prefix.unwrap_or(0).min(input);
    let explicit = row.model.is_none_or(|m| m.starts_with("claude"));
    let read = if explicit {
        raw
    } else {
        raw.div_euclid(AUTO_CACHE_BLOCK) * AUTO_CACHE_BLOCK
    };
    let write = if explicit { input - read } else { 0 };
    let [_, _, _, reasoning, output] = row.tokens;
    Calibrated {
        tokens: [Some(input), Some(read), Some(write), reasoning, output],
        source: Some("estimated"),
    }
}

/// The calls of one shutdown total, apportioned to it.
fn scaled(group: &[&Row<'_>]) -> Vec<Calibrated> {
    let first = group.first();
    let left = |k: usize| first.and_then(|r| r.left.get(k).copied().flatten());
    let estimates: Vec<i64> = group.iter().map(|r| r.estimate).collect();
    let inputs: Vec<i64> = apportion(left(0), &estimates)
        .into_iter()
        .map(|v| v.unwrap_or(0))
        .collect();
    let input_known = left(0).is_some();
    // Cache reads: over the warm prefixes, or every prefix whole and the excess over the rest.
    let raw: Vec<i64> = group
        .iter()
        .zip(&inputs)
        .map(|(r, &input)| r.previous_prefix.unwrap_or(0).min(input))
        .collect();
    let reads_total = left(1).unwrap_or(0).min(sum(inputs.iter().copied()));
    let warm = sum(raw.iter().copied());
    let reads: Vec<i64> = if reads_total <= warm {
        apportion(Some(reads_total), &raw)
            .into_iter()
            .map(|v| v.unwrap_or(0))
            .collect()
    } else {
        let rest: Vec<i64> = inputs.iter().zip(&raw).map(|(i, r)| i - r).collect();
        apportion(Some(reads_total - warm), &rest)
            .into_iter()
            .zip(&raw)
            .map(|(v, r)| r + v.unwrap_or(0))
            .collect()
    };
    let rest: Vec<i64> = inputs.iter().zip(&reads).map(|(i, r)| i - r).collect();
    let writes_total = left(2).unwrap_or(0).min(sum(rest.iter().copied()));
    let writes = apportion(Some(writes_total), &rest);
    // Reasoning, in proportion to the stated outputs.
    let outputs: Vec<i64> = group.iter().map(|r| r.tokens[4].unwrap_or(0)).collect();
    let reasoning = apportion(Some(left(3).unwrap_or(0)), &outputs);
    // Output.
    let total_known = first.is_some_and(|r| r.total_output.is_some());
    let sum_ok = first.is_some_and(|r| r.sum_ok);
    let stated = sum(group.iter().filter_map(|r| r.tokens[4]));
    let remaining = left(4).map(|l| (l - stated).max(0));
    let missing_weights: Vec<i64> = group
        .iter()
        .map(|r| {
            if r.tokens[4].is_none() {
                r.reply_bytes
            } else {
                0
            }
        })
        .collect();
    let share = apportion(remaining, &missing_weights);
    let spread_weights: Vec<i64> = group
        .iter()
        .map(|r| r.tokens[4].unwrap_or(r.reply_bytes))
        .collect();
    let spread = apportion(left(4), &spread_weights);
    group
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let output = if total_known && !sum_ok {
                spread.get(i).copied().flatten()
            } else if r.tokens[4].is_none() && total_known {
                share.get(i).copied().flatten()
            } else {
                r.tokens[4]
            };
            Calibrated {
                tokens: [
                    input_known.then(|| inputs.get(i).copied()).flatten(),
                    reads.get(i).copied(),
                    writes.get(i).copied().flatten(),
                    left(3).and(reasoning.get(i).copied().flatten()),
                    output,
                ],
                source: Some(if r.sum_ok { "calibrated" } else { "estimated" }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_the_total_and_ties_go_to_later_rows() {
        assert_eq!(
            apportion(Some(10), &[1, 1, 1]),
            vec![Some(3), Some(3), Some(4)]
        );
        assert_eq!(apportion(Some(5), &[0, 0]), vec![Some(2), Some(3)]);
        assert_eq!(apportion(None, &[1]), vec![None]);
        assert_eq!(apportion(Some(7), &[]), Vec::<Option<i64>>::new());
    }

    /// The apportioning as first written: every row ranked by a full sort, in 128 bits.
    fn ranked(total: i64, weights: &[i64]) -> Vec<Option<i64>> {
        let sum: i128 = weights.iter().map(|&w| i128::from(w)).sum();
        let count = i128::try_from(weights.len()).unwrap_or(i128::MAX).max(1);
        let denominator = if sum > 0 { sum } else { count };
        let total = i128::from(total);
        let mut parts: Vec<(i128, i128)> = weights
            .iter()
            .map(|&w| {
                let w = if sum > 0 { i128::from(w) } else { 1 };
                let scaled = total.saturating_mul(w);
                (
                    scaled.div_euclid(denominator),
                    scaled.rem_euclid(denominator),
                )
            })
            .collect();
        let leftover = total - parts.iter().map(|p| p.0).sum::<i128>();
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&i| (denominator - parts[i].1, usize::MAX - i));
        for (rank, &i) in order.iter().enumerate() {
            if i128::try_from(rank + 1).unwrap() <= leftover {
                parts[i].0 += 1;
            }
        }
        parts
            .into_iter()
            .map(|(share, _)| Some(i64::try_from(share).unwrap_or(i64::MAX)))
            .collect()
    }

    #[test]
    fn shares_are_those_of_a_full_ranking_in_128_bits() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let scales = [1i64, 3, 1_000, 1 << 40, i64::MAX];
        for _ in 0..20_000 {
            let scale = scales[(next() % 5) as usize];
            let n = (next() % 12) as usize;
            let weights: Vec<i64> = (0..n)
                .map(|_| match next() % 6 {
                    0 => 0,
                    1 => -((next() % 5) as i64),
                    _ => (next() as i64).rem_euclid(scale),
                })
                .collect();
            let total = match next() % 4 {
                0 => 0,
                1 => -((next() % 100) as i64),
                _ => (next() as i64).rem_euclid(scale),
            };
            assert_eq!(
                apportion(Some(total), &weights),
                ranked(total, &weights),
                "{total} {weights:?}"
            );
        }
    }
}
