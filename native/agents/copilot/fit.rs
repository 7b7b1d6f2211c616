//! The reconstruction's per-session fit (its polars oracle: `tests/oracle/reference/fit.py`, `fit`):
//! weighted least squares with priors, solved one session at a time.
//!
//! A session's calls carry their regressors (the fixed part's unknown, bytes and items so far
//! per kind of content, for the prompt and for the prefix the next call reads from cache);
//! each constraint row sums the prompt, prefix or fixed part of some calls and states a
//! figure. The normal equations XᵀWX + P (the priors' precisions, and the links that keep a
//! session's fixed parts alike) are solved by `solve::solve_systems`; a cache-read row the fit
//! already exceeds is dropped and the fit solved again (at most three rounds, as the polars
//! version did). Out come each call's fitted prompt, prefix and fixed part in whole tokens
//! (rounded half to even, as polars rounds), each unknown's value and whether the log
//! determined it, and the constraints used with their root-mean-square relative misfit.
#![forbid(unsafe_code)]

use rustc_hash::FxHashMap;

/// The content kinds' unknowns, in the order of the regressors.
pub const RATES: [&str; 5] = ["tool", "prose", "json", "item", "task"];
/// How far a sub-agent's fixed part is expected to be from the main agent's (tokens).
pub const LINK_SD: f64 = 8_000.0;
/// An unknown is determined when its standard error is under this share of its prior's.
pub const DETERMINED: f64 = 0.5;
/// Rounds of dropping the cache-read rows the fit exceeds.
const ROUNDS: usize = 3;

/// One call's regressors.
#[derive(Clone, Debug, Default)]
pub struct Regressors<'a> {
    pub seq: i64,
    pub fixed_key: &'a str,
    pub c_fixed: f64,
    /// tool, prose, json, item, task: of the prompt, and of the cacheable prefix.
    pub prompt: [f64; 5],
    pub prefix: [f64; 5],
    pub offset: i64,
}

/// Which part of a call a constraint sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Prompt,
    Prefix,
    Fixed,
}

/// One member of a constraint row: the row, the call, the part.
#[derive(Clone, Copy, Debug)]
pub struct Member<'a> {
    pub row: &'a str,
    pub seq: i64,
    pub part: Part,
}

/// One constraint row's figure: its value, standard deviation, and whether it only bounds
/// the prediction from below.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub row: &'a str,
    pub y: f64,
    pub sd: f64,
    pub at_least: bool,
}

/// One unknown's prior.
#[derive(Clone, Copy, Debug)]
pub struct Prior<'a> {
    pub param: &'a str,
    pub mean: f64,
    pub sd: f64,
}

/// Relative standard error of a constraint: exact sums and observed calls, context sizes.
pub const SUM_SD: f64 = 0.02;
pub const CONTEXT_SD: f64 = 0.10;

/// What the constraints read of a call, beside its regressors.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    pub kind: &'a str,
    pub model: Option<&'a str>,
    pub segment: Option<i64>,
    /// The calls of its model are the shutdown's requests (its totals are theirs).
    pub sum_ok: bool,
    /// The shutdown's Σ input and Σ cache read of its model and segment.
    pub total_input: Option<i64>,
    pub total_read: Option<i64>,
    /// Its own observed figures (a per-call record).
    pub observed: bool,
    pub input: Option<i64>,
    pub cache_read: Option<i64>,
    pub output: Option<i64>,
    /// The previous call whose cache it reads, and what of it (prefix, or fixed part only).
    pub previous: Option<(i64, Part)>,
    /// Its agent (`main`, else the sub-agent's id).
    pub agent: Option<&'a str>,
    /// A compaction call's `preCompactionTokens`.
    pub pre_compaction: Option<i64>,
}

/// What a constraint row sums, as `tests/oracle/reference/fit.py` names it (`in:{segment}:{model}`,
/// `read:…`, `obs:{seq}`, `obsread:{seq}`, `agent:{id}`, `stated-fixed`, `pre:{seq}`): the
/// name's parts, not its text, so that a row is found without formatting a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum RowKey<'a> {
    In(i64, &'a str),
    Read(i64, &'a str),
    Obs(i64),
    ObsRead(i64),
    Agent(&'a str),
    StatedFixed,
    Pre(i64),
}

/// Constraint rows, each named by its position: members (row, call, part) and targets (row,
/// y, sd, at least), and how many rows there are.
pub type Rows = (Vec<(usize, i64, Part)>, Vec<(usize, f64, f64, bool)>, usize);

/// Every constraint row of a session (see `constraints` in `tests/oracle/reference/fit.py`): the
/// members as (row, call, part) and the targets as (row, y, sd, at least), each row numbered
/// in the order it is first met (a row's target is given once, when it is first met).
/// `runs`: each sub-agent's `totalTokens` (input + output of all its calls); `stated`: the
/// main fixed part the log states.
pub fn constraint_rows<'f>(
    calls: &[(Regressors<'_>, Facts<'f>)],
    runs: &FxHashMap<&str, i64>,
    stated: Option<i64>,
) -> Rows {
    let mut members = Vec::with_capacity(calls.len().saturating_mul(2));
    let mut targets: Vec<(usize, f64, f64, bool)> = Vec::new();
    let mut ids: FxHashMap<RowKey<'f>, usize> = FxHashMap::default();
    // The two rows last named (a call's input row, then its cache-read row, again and again
    // for the calls of one total), found without hashing.
    let mut recent: [Option<(RowKey<'f>, usize)>; 2] = [None, None];
    // The row's number, and its target added where the row is new.
    let mut row = |key: RowKey<'f>, y: i64, sd: f64, at_least: bool| -> usize {
        if let Some(id) = recent
            .iter()
            .find_map(|r| r.filter(|(k, _)| *k == key).map(|(_, id)| id))
        {
            return id;
        }
        let next = ids.len();
        let id = *ids.entry(key).or_insert(next);
        if id == next {
            let y = y as f64;
            targets.push((id, y, y * sd + 100.0, at_least));
        }
        recent = [Some((key, id)), recent[0]];
        id
    };
    for (x, f) in calls {
        let llm = f.kind != "compaction";
        let (segment, model) = (f.segment.unwrap_or(0), f.model.unwrap_or(""));
        if f.sum_ok && llm {
            if let Some(y) = f.total_input {
                let id = row(RowKey::In(segment, model), y, SUM_SD, false);
                members.push((id, x.seq, Part::Prompt));
            }
            if let (Some(y), Some((seq, part))) = (f.total_read.filter(|y| *y > 0), f.previous) {
                let id = row(RowKey::Read(segment, model), y, SUM_SD, true);
                members.push((id, seq, part));
            }
        }
        if f.observed && llm {
            if let Some(y) = f.input {
                let id = row(RowKey::Obs(x.seq), y, SUM_SD, false);
                members.push((id, x.seq, Part::Prompt));
                if let (Some(y), Some((seq, part))) = (f.cache_read.filter(|y| *y > 0), f.previous)
                {
                    let id = row(RowKey::ObsRead(x.seq), y, SUM_SD, true);
                    members.push((id, seq, part));
                }
            }
        }
    }
    // A sub-agent's totalTokens less its outputs: its calls' Σ input, where every one of its
    // calls states its output.
    let mut agents: Vec<&'f str> = Vec::new();
    let mut by_agent: FxHashMap<&'f str, Vec<&(Regressors<'_>, Facts<'f>)>> = FxHashMap::default();
    for call in calls.iter().filter(|(_, f)| f.kind == "subagent") {
        let Some(agent) = call.1.agent.filter(|a| runs.contains_key(a)) else {
            continue;
        };
        by_agent
            .entry(agent)
            .or_insert_with(|| {
                agents.push(agent);
                Vec::new()
            })
            .push(call);
    }
    for agent in agents {
        let (Some(list), Some(&total)) = (by_agent.get(agent), runs.get(agent)) else {
            continue;
        };
        if list.iter().any(|(_, f)| f.output.is_none()) {
            continue;
        }
        let outputs = list
            .iter()
            .filter_map(|(_, f)| f.output)
            .fold(0i64, i64::saturating_add);
        let y = total.saturating_sub(outputs);
        if y > 0 {
            let id = row(RowKey::Agent(agent), y, SUM_SD, false);
            for (x, _) in list {
                members.push((id, x.seq, Part::Prompt));
            }
        }
    }
    if let (Some(y), Some(first)) = (
        stated,
        calls
            .iter()
            .filter(|(_, f)| f.kind == "main")
            .map(|(x, _)| x.seq)
            .min(),
    ) {
        let id = row(RowKey::StatedFixed, y, SUM_SD, false);
        members.push((id, first, Part::Fixed));
    }
    for (x, f) in calls {
        if let (true, Some(y)) = (f.kind == "compaction", f.pre_compaction) {
            let id = row(RowKey::Pre(x.seq), y, CONTEXT_SD, false);
            members.push((id, x.seq, Part::Prompt));
        }
    }
    let count = ids.len();
    (members, targets, count)
}

/// Fit one session from its calls (regressors and facts), its sub-agents' totals and the
/// fixed part the log states: the constraint rows (`constraint_rows`), then the fit.
pub fn fit_calls<'a>(
    calls: &[(Regressors<'a>, Facts<'_>)],
    runs: &FxHashMap<&str, i64>,
    stated: Option<i64>,
    priors: &[Prior<'a>],
) -> Fitted<'a> {
    let (members, targets, count) = constraint_rows(calls, runs, stated);
    let regressors: Vec<&Regressors<'a>> = calls.iter().map(|(x, _)| x).collect();
    fit_rows(&regressors, &members, &targets, count, priors)
}

/// A call's fitted prompt, prefix and fixed part (whole tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub seq: i64,
    pub prompt: i64,
    pub prefix: i64,
    pub fixed: i64,
}

/// One session's fit.
#[derive(Clone, Debug, Default)]
pub struct Fitted<'a> {
    pub estimates: Vec<Estimate>,
    /// (unknown, value rounded to 4 places, determined), by name.
    pub parameters: Vec<(&'a str, f64, bool)>,
    pub constraints: i64,
    /// None without any constraint.
    pub residual_pct: Option<f64>,
    /// Each unknown's posterior standard error (the square root of the diagonal of
    /// (XᵀWX + P)⁻¹, priors and links included), in the order of `parameters`: what an
    /// estimated call's interval is built from (`bounds` in `copilot_tokens.rs`).
    pub standard_errors: Vec<f64>,
}

/// `value` rounded to `places` decimals, half to even (polars' `round`).
pub fn round_to(value: f64, places: i32) -> f64 {
    if places == 0 {
        return value.round_ties_even();
    }
    let scale = 10f64.powi(places);
    (value * scale).round_ties_even() / scale
}

/// The unknowns a call's parts read, as positions among the priors (None: no prior): its
/// fixed part's, and the rates' in `RATES` order.
#[derive(Clone, Copy)]
struct Unknowns {
    fixed: Option<usize>,
    rates: [Option<usize>; 5],
}

/// The coefficients of a call's part: (unknown, value), the fixed part first, then the
/// rates in `RATES` order, zeros left out (no list is built: a fit reads them per call).
fn coefficients<'c>(
    call: &'c Regressors<'_>,
    unknowns: &'c Unknowns,
    part: Part,
) -> impl Iterator<Item = (Option<usize>, f64)> + 'c {
    let (fixed, rates) = match part {
        Part::Fixed => (1.0, None),
        Part::Prompt => (call.c_fixed, Some(&call.prompt)),
        Part::Prefix => (call.c_fixed, Some(&call.prefix)),
    };
    let rates = rates
        .into_iter()
        .flat_map(|values| unknowns.rates.iter().copied().zip(*values));
    std::iter::once((unknowns.fixed, fixed))
        .chain(rates)
        .filter(|(_, value)| *value != 0.0)
}

/// Fit one session (constraint rows named by text: numbered here, then `fit_rows`).
pub fn fit_session<'a>(
    calls: &[Regressors<'a>],
    members: &[Member<'_>],
    targets: &[Target<'_>],
    priors: &[Prior<'a>],
) -> Fitted<'a> {
    let mut ids: FxHashMap<&str, usize> = FxHashMap::default();
    let mut id = |row| {
        let next = ids.len();
        *ids.entry(row).or_insert(next)
    };
    let members: Vec<(usize, i64, Part)> =
        members.iter().map(|m| (id(m.row), m.seq, m.part)).collect();
    let targets: Vec<(usize, f64, f64, bool)> = targets
        .iter()
        .map(|t| (id(t.row), t.y, t.sd, t.at_least))
        .collect();
    let calls: Vec<&Regressors<'a>> = calls.iter().collect();
    fit_rows(&calls, &members, &targets, ids.len(), priors)
}

/// Fit one session whose `count` constraint rows are numbered: members (row, call, part),
/// targets (row, y, sd, at least).
fn fit_rows<'a>(
    calls: &[&Regressors<'a>],
    members: &[(usize, i64, Part)],
    targets: &[(usize, f64, f64, bool)],
    count: usize,
    priors: &[Prior<'a>],
) -> Fitted<'a> {
    let index: FxHashMap<&'a str, usize> = priors
        .iter()
        .enumerate()
        .map(|(i, p)| (p.param, i))
        .collect();
    let rates = RATES.map(|name| index.get(name).copied());
    // (a session's calls name a fixed part or a few: the last one's looked up once)
    let mut last: Option<(&str, Option<usize>)> = None;
    let unknowns: Vec<Unknowns> = calls
        .iter()
        .map(|call| {
            let fixed = match last {
                Some((key, fixed)) if key == call.fixed_key => fixed,
                _ => index.get(call.fixed_key).copied(),
            };
            last = Some((call.fixed_key, fixed));
            Unknowns { fixed, rates }
        })
        .collect();
    let by_seq: FxHashMap<i64, usize> = calls.iter().enumerate().map(|(i, c)| (c.seq, i)).collect();
    // Each row's coefficients (summed over its members in their order), as (unknown's
    // position, value), unknowns without a prior left out, and whether it has any
    // coefficient at all; and its offset.
    let mut resolved: Vec<Vec<(usize, f64)>> = vec![Vec::new(); count];
    let mut present = vec![false; count];
    let mut offsets = vec![0i64; count];
    for &(row, seq, part) in members {
        let (Some(&c), Some(coefs), Some(has)) = (
            by_seq.get(&seq),
            resolved.get_mut(row),
            present.get_mut(row),
        ) else {
            continue;
        };
        let (Some(call), Some(known)) = (calls.get(c), unknowns.get(c)) else {
            continue;
        };
        for (unknown, value) in coefficients(call, known, part) {
            *has = true;
            let Some(i) = unknown else {
                continue;
            };
            match coefs.iter_mut().find(|(j, _)| *j == i) {
                Some((_, sum)) => *sum += value,
                None => coefs.push((i, value)),
            }
        }
        if part != Part::Fixed {
            if let Some(total) = offsets.get_mut(row) {
                *total = total.saturating_add(call.offset);
            }
        }
    }
    // In the unknowns' name order: the order of every sum below. (Each unknown's rank among
    // the names, alike for alike names, stands for its name: the stable sort keeps the same
    // order.)
    let mut by_name: Vec<usize> = (0..priors.len()).collect();
    by_name.sort_by(|&a, &b| {
        let name = |k: usize| priors.get(k).map(|p| p.param);
        name(a).cmp(&name(b))
    });
    let mut rank = vec![0usize; priors.len()];
    let mut previous: Option<(&str, usize)> = None;
    for (at, &k) in by_name.iter().enumerate() {
        let name = priors.get(k).map_or("", |p| p.param);
        let r = match previous {
            Some((seen, r)) if seen == name => r,
            _ => at,
        };
        previous = Some((name, r));
        if let Some(slot) = rank.get_mut(k) {
            *slot = r;
        }
    }
    for coefs in &mut resolved {
        coefs.sort_by_key(|(i, _)| rank.get(*i).copied());
    }
    // (row, y less the offsets, weight, stated y, at least)
    let mut rows: Vec<(usize, f64, f64, f64, bool)> = targets
        .iter()
        .filter(|t| present.get(t.0).copied().unwrap_or(false))
        .map(|&(row, y, sd, at_least)| {
            let off = offsets.get(row).copied().unwrap_or(0) as f64;
            (row, y - off, 1.0 / (sd * sd), y, at_least)
        })
        .collect();
    let n = priors.len();
    let links = links(priors);
    let mut theta = vec![0.0; n];
    let mut variance = vec![0.0; n];
    let mut predicted = vec![0.0; count];
    let mut matrix = vec![0.0; n * n];
    let mut vector = vec![0.0; n];
    for _ in 0..ROUNDS {
        matrix.fill(0.0);
        vector.fill(0.0);
        for (row, y, w, _, _) in &rows {
            let Some(coefs) = resolved.get(*row) else {
                continue;
            };
            for &(i, vp) in coefs {
                if let Some(cell) = vector.get_mut(i) {
                    *cell += w * vp * y;
                }
                for &(j, vq) in coefs {
                    if let Some(cell) = matrix.get_mut(i * n + j) {
                        *cell += w * vp * vq;
                    }
                }
            }
        }
        for &(i, j, g) in &links {
            if let Some(cell) = matrix.get_mut(i * n + j) {
                *cell += g;
            }
        }
        for (i, prior) in priors.iter().enumerate() {
            let precision = 1.0 / (prior.sd * prior.sd);
            if let Some(cell) = matrix.get_mut(i * n + i) {
                *cell += precision;
            }
            if let Some(cell) = vector.get_mut(i) {
                *cell += prior.mean * precision;
            }
        }
        let (solution, var) = crate::agents::copilot::solve::solve_systems(&[n], &matrix, &vector);
        // Clipped at 0 (NaN, from a singular system, stays NaN as polars' clip leaves it).
        theta = solution;
        for t in &mut theta {
            if *t < 0.0 {
                *t = 0.0;
            }
        }
        variance = var;
        for (value, coefs) in predicted.iter_mut().zip(&resolved) {
            *value = coefs
                .iter()
                .filter_map(|&(i, v)| Some(v * theta.get(i)?))
                .sum();
        }
        let before = rows.len();
        rows.retain(|(row, y, _, _, at_least)| {
            !(*at_least && predicted.get(*row).copied().unwrap_or(0.0) > *y)
        });
        if rows.len() == before {
            break;
        }
    }
    let part_value = |call: &Regressors<'a>, known: &Unknowns, part: Part| -> f64 {
        coefficients(call, known, part)
            .filter_map(|(p, v)| Some(v * theta.get(p?)?))
            .sum()
    };
    let estimates = calls
        .iter()
        .zip(&unknowns)
        .map(|(call, known)| {
            let off = call.offset as f64;
            let whole = |v: f64| round_to(v, 0) as i64;
            Estimate {
                seq: call.seq,
                prompt: whole(part_value(call, known, Part::Prompt) + off),
                prefix: whole(part_value(call, known, Part::Prefix) + off),
                fixed: whole(part_value(call, known, Part::Fixed)),
            }
        })
        .collect();
    let mut parameters: Vec<(&'a str, f64, bool)> = priors
        .iter()
        .enumerate()
        .map(|(i, prior)| {
            let value = theta.get(i).copied().unwrap_or(f64::NAN);
            let var = variance.get(i).copied().unwrap_or(f64::NAN);
            let sd = if var < 0.0 { 0.0 } else { var.sqrt() };
            (prior.param, round_to(value, 4), sd < DETERMINED * prior.sd)
        })
        .collect();
    parameters.sort_by(|x, y| x.0.cmp(y.0));
    let standard_errors = parameters
        .iter()
        .map(|(name, _, _)| {
            let var = index
                .get(name)
                .and_then(|&i| variance.get(i))
                .copied()
                .unwrap_or(f64::NAN);
            if var < 0.0 {
                0.0
            } else {
                var.sqrt()
            }
        })
        .collect();
    let residual_pct = (!rows.is_empty()).then(|| {
        let squares: f64 = rows
            .iter()
            .map(|(row, y, _, stated, _)| {
                let miss =
                    (predicted.get(*row).copied().unwrap_or(0.0) - y) / stated.abs().max(1.0);
                miss * miss
            })
            .sum();
        round_to((squares / rows.len() as f64).sqrt() * 100.0, 2)
    });
    Fitted {
        estimates,
        parameters,
        constraints: i64::try_from(rows.len()).unwrap_or(i64::MAX),
        residual_pct,
        standard_errors,
    }
}

/// The prior that a session's fixed parts are alike: (i, j, value) terms of the matrix, a
/// term (θ_k - θ_main)² / LINK_SD² for each fixed part but the anchor (the main agent's first
/// by name, else the first by name).
fn links(priors: &[Prior<'_>]) -> Vec<(usize, usize, f64)> {
    let fixed: Vec<(usize, &str)> = priors
        .iter()
        .enumerate()
        .filter(|(_, p)| p.param.starts_with("fixed:"))
        .map(|(i, p)| (i, p.param))
        .collect();
    let Some(&(anchor, _)) = fixed
        .iter()
        .min_by_key(|(_, name)| (!name.starts_with("fixed:main|"), *name))
    else {
        return Vec::new();
    };
    let w = 1.0 / (LINK_SD * LINK_SD);
    let mut terms = Vec::new();
    for &(k, _) in fixed.iter().filter(|(k, _)| *k != anchor) {
        terms.extend([
            (k, k, w),
            (anchor, anchor, w),
            (k, anchor, -w),
            (anchor, k, -w),
        ]);
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_to_even() {
        assert_eq!(round_to(0.5, 0), 0.0);
        assert_eq!(round_to(1.5, 0), 2.0);
        assert_eq!(round_to(2.5, 0), 2.0);
        assert_eq!(round_to(0.12345, 4), 0.1234);
    }

    #[test]
    fn a_stated_sum_pins_the_fixed_part() {
        let calls: Vec<Regressors> = (1..=3)
            .map(|seq| Regressors {
                seq,
                fixed_key: "fixed:main|m",
                c_fixed: 1.0,
                ..Regressors::default()
            })
            .collect();
        let members: Vec<Member> = (1..=3)
            .map(|seq| Member {
                row: "in",
                seq,
                part: Part::Prompt,
            })
            .collect();
        let targets = [Target {
            row: "in",
            y: 30_000.0,
            sd: 1.0,
            at_least: false,
        }];
        let priors = [Prior {
            param: "fixed:main|m",
            mean: 20_000.0,
            sd: 12_000.0,
        }];
        let fitted = fit_session(&calls, &members, &targets, &priors);
        assert!(fitted.estimates.iter().all(|e| e.prompt == 10_000));
        assert_eq!(fitted.constraints, 1);
        assert!(fitted.parameters.iter().all(|p| p.2));
    }
}

/// Prompt cache lifetime for the previous call's prefix to count as read (ms).
pub const CACHE_TTL_MS: i64 = 5 * 60 * 1000;

/// One call as the regressors read it (a session's calls in event order).
#[derive(Clone, Copy, Debug, Default)]
pub struct CallIn<'a> {
    pub seq: i64,
    pub kind: &'a str,
    pub agent_id: Option<&'a str>,
    pub agent_name: Option<&'a str>,
    pub model: Option<&'a str>,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
}

/// One event that adds to an agent's conversation (a message, a tool result, a skill) or
/// restarts it (a compaction), in event order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Item<'a> {
    pub seq: i64,
    pub kind: &'a str,
    /// Its agent id, else its parent tool call, else `main`.
    pub agent: &'a str,
    pub content_bytes: i64,
    pub tool_request_bytes: i64,
    pub post_compaction_tokens: Option<i64>,
}

/// A call's regressors and its cache link (see `Regressors`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XRow<'a> {
    /// `main`, or the sub-agent's id (None: a sub-agent call without one).
    pub agent: Option<&'a str>,
    pub fixed_key: String,
    pub c_fixed: i64,
    /// tool, prose, json, item (bytes and items so far); task is 0.
    pub x: [i64; 4],
    /// tool, prose, json, item, task of the prefix the next call can read.
    pub p: [i64; 5],
    pub offset: i64,
    pub prev_seq: Option<i64>,
    /// `prefix`, or `fixed` after a compaction in between.
    pub prev_part: &'static str,
}

/// What an agent's conversation holds after an item: bytes and items per kind, user bytes
/// and items, the compaction epoch and the size a compaction stated.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    sums: [i64; 6],
    epoch: i64,
    offset: Option<i64>,
}

/// A chain of calls whose cache one reads from the previous: agent and model.
type Chain<'a> = (Option<&'a str>, Option<&'a str>);
/// A chain's last call: its seq, when it ended, its user bytes and items so far, its epoch.
type Link = (i64, Option<i64>, [i64; 2], i64);

/// An agent's conversation after `item`, from what it held before (`last`).
fn after(last: Held, item: &Item<'_>) -> Held {
    let reset = item.kind == "session.compaction_complete";
    let mut now = if reset {
        Held {
            sums: [0; 6],
            epoch: last.epoch + 1,
            offset: None,
        }
    } else {
        last
    };
    let size = item.content_bytes;
    let request = item.tool_request_bytes;
    let add: [i64; 6] = match item.kind {
        "tool.execution_complete" => [size, 0, 0, 1, 0, 0],
        "user.message" => [0, size, 0, 1, size, 1],
        "skill.invoked" => [0, size, 0, 1, 0, 0],
        "assistant.message" => [0, size.saturating_sub(request), request, 1, 0, 0],
        // A compaction that states no size (Claude Code, Codex): the agent goes on from
        // its fixed part and the summary, which counts as prose (real Claude Code logs:
        // the call after one sends the fixed part again, not a prompt of nothing).
        "session.compaction_complete" if item.post_compaction_tokens.is_none() => {
            [0, size, 0, 1, 0, 0]
        }
        _ => [0; 6],
    };
    for (sum, value) in now.sums.iter_mut().zip(add) {
        *sum = sum.saturating_add(value);
    }
    now.offset = item.post_compaction_tokens.or(now.offset);
    now
}

/// What each agent's conversation holds before each call: the items before it (by `seq`)
/// applied in order.
enum Before<'a> {
    /// Calls and items both in `seq` order (the token stage's case): one sweep, each agent's
    /// conversation so far, and the next item to apply.
    Sweep(FxHashMap<&'a str, Held>, usize),
    /// Any other order: each agent's conversation after each of its items, in item order.
    Histories(FxHashMap<&'a str, Vec<(i64, Held)>>),
}

impl<'a> Before<'a> {
    fn new(calls: &[CallIn<'a>], items: &[Item<'a>]) -> Self {
        if calls.is_sorted_by_key(|c| c.seq) && items.is_sorted_by_key(|i| i.seq) {
            return Before::Sweep(FxHashMap::default(), 0);
        }
        let mut held: FxHashMap<&'a str, Vec<(i64, Held)>> = FxHashMap::default();
        for item in items {
            let history = held.entry(item.agent).or_default();
            let last = history.last().map(|(_, h)| *h).unwrap_or_default();
            history.push((item.seq, after(last, item)));
        }
        Before::Histories(held)
    }

    /// What `agent` holds before the call at `seq` (calls asked in `seq` order).
    fn at(&mut self, items: &[Item<'a>], agent: Option<&'a str>, seq: i64) -> Held {
        match self {
            Before::Sweep(now, next) => {
                // (the same agent's items come in runs: its slot is looked up once a run)
                let mut slot: Option<(&'a str, &mut Held)> = None;
                while let Some(item) = items.get(*next).filter(|i| i.seq < seq) {
                    let held = match slot.take() {
                        Some((agent, held)) if agent == item.agent => held,
                        _ => now.entry(item.agent).or_default(),
                    };
                    *held = after(*held, item);
                    slot = Some((item.agent, held));
                    *next += 1;
                }
                agent.and_then(|a| now.get(a)).copied().unwrap_or_default()
            }
            Before::Histories(held) => agent
                .and_then(|a| held.get(a))
                .and_then(|history| {
                    let at = history.partition_point(|(s, _)| *s < seq);
                    at.checked_sub(1)
                        .and_then(|i| history.get(i))
                        .map(|(_, h)| *h)
                })
                .unwrap_or_default(),
        }
    }
}

/// The regressors of one session's calls (in `calls` order, which is event order).
pub fn regressors<'a>(calls: &[CallIn<'a>], items: &[Item<'a>]) -> Vec<XRow<'a>> {
    // Each agent's conversation before each call.
    let mut before = Before::new(calls, items);
    let mut first_of_agent: FxHashMap<&'a str, i64> = FxHashMap::default();
    let agents: Vec<Option<&'a str>> = calls
        .iter()
        .map(|c| {
            if c.kind == "subagent" {
                c.agent_id
            } else {
                Some("main")
            }
        })
        .collect();
    for (call, agent) in calls.iter().zip(&agents) {
        if let Some(agent) = agent {
            let first = first_of_agent.entry(agent).or_insert(call.seq);
            *first = (*first).min(call.seq);
        }
    }
    // The previous call of each chain (agent, model): its end, user sums and epoch.
    let mut chains: FxHashMap<Chain<'a>, Link> = FxHashMap::default();
    // Each fixed part's name, formatted once (who, model, name).
    let mut names: Vec<(&'a str, &'a str, String)> = Vec::new();
    calls
        .iter()
        .zip(agents)
        .map(|(call, agent)| {
            let state = before.at(items, agent, call.seq);
            let [tool, prose, json, item, user_bytes, user_items] = state.sums;
            let previous = chains.insert(
                (agent, call.model),
                (
                    call.seq,
                    call.end_time.or(call.start_time),
                    [user_bytes, user_items],
                    state.epoch,
                ),
            );
            let (prev_user, prev_epoch) = previous.map_or(([0, 0], None), |p| (p.2, Some(p.3)));
            let newest_bytes = user_bytes.saturating_sub(prev_user[0]).max(0);
            let newest_items = user_items.saturating_sub(prev_user[1]).max(0);
            let warm = previous.and_then(|(seq, ended, _, _)| {
                let gap = call.start_time?.checked_sub(ended?)?;
                (gap <= CACHE_TTL_MS).then_some(seq)
            });
            let task = agent.is_some_and(|a| {
                a != "main" && first_of_agent.get(a) == Some(&call.seq) && user_items == 0
            });
            let who = if agent == Some("main") {
                "main"
            } else {
                call.agent_name.unwrap_or("subagent")
            };
            let model = call.model.unwrap_or("?");
            let fixed_key = match names.iter().find(|(w, m, _)| *w == who && *m == model) {
                Some((_, _, name)) => name.clone(),
                None => {
                    let name = format!("fixed:{who}|{model}");
                    names.push((who, model, name.clone()));
                    name
                }
            };
            XRow {
                agent,
                fixed_key,
                c_fixed: i64::from(state.epoch == 0 || state.offset.is_none()),
                x: [tool, prose, json, item],
                p: [
                    tool,
                    prose.saturating_sub(newest_bytes),
                    json,
                    item.saturating_sub(newest_items),
                    if task { -1 } else { 0 },
                ],
                offset: state.offset.unwrap_or(0),
                prev_seq: warm,
                prev_part: if prev_epoch.is_none_or(|e| e == state.epoch) {
                    "prefix"
                } else {
                    "fixed"
                },
            }
        })
        .collect()
}
