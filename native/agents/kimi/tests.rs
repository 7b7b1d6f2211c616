//! The Kimi fold's rules, each on literal lines.

use super::*;
use crate::fold::testing::{figures, group, numbered};

const META: &str = r#"{"type":"metadata","protocol_version":"1.5","created_at":1000}"#;

fn request(agent: &str, t: i64) -> String {
    format!(
        r#"{{"type":"llm.request","agentId":"{agent}","kind":"loop","provider":"openai","model":"kimi-k2.7-code","modelAlias":"moonshot-ai/kimi-k2.7-code","time":{t}}}"#
    )
}

/// A `usage.record` at `t` of (uncached input, output, cache read, cache write).
fn record(agent: &str, t: i64, u: [i64; 4], scope: &str) -> String {
    format!(
        r#"{{"type":"usage.record","agentId":"{agent}","model":"moonshot-ai/kimi-k2.7-code","usage":{{"inputOther":{},"output":{},"inputCacheRead":{},"inputCacheCreation":{}}},"usageScope":"{scope}","time":{t}}}"#,
        u[0], u[1], u[2], u[3]
    )
}

fn step_end(t: i64, u: [i64; 4]) -> String {
    format!(
        r#"{{"type":"context.append_loop_event","agentId":"main","event":{{"type":"step.end","uuid":"s{t}","step":1,"finishReason":"tool_use","usage":{{"inputOther":{},"output":{},"inputCacheRead":{},"inputCacheCreation":0}},"messageId":"chatcmpl-{t}"}},"time":{t}}}"#,
        u[0], u[1], u[2]
    )
}

fn replay(t: i64, u: [i64; 4]) -> String {
    format!(
        r#"{{"message":{{"message":{{"role":"assistant","content":[]}},"meta":{{"model":{{"provider":"agent-loop","model":"agent-loop"}},"source":"llm","usage":{{"inputOther":{},"output":{},"inputCacheRead":{},"inputCacheCreation":0}}}}}},"type":"agent.message.appended","time":{t},"kind":"event"}}"#,
        u[0], u[1], u[2]
    )
}

fn failed(t: i64) -> Vec<String> {
    vec![
        request("main", t),
        format!(
            r#"{{"type":"context.append_loop_event","agentId":"main","event":{{"type":"step.end","uuid":"f{t}","step":4,"finishReason":"error"}},"time":{t}}}"#
        ),
        format!(
            r#"{{"type":"turn.step.retrying","agentId":"main","turnId":1,"step":4,"failedAttempt":1,"nextAttempt":2,"maxAttempts":10,"errorName":"APIProviderRateLimitError","statusCode":429,"time":{t}}}"#
        ),
    ]
}

const PROMPT: &str = r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"fix it"}],"id":"msg_1","toolCalls":[],"origin":{"kind":"user"}},"time":1001}"#;
const TOOL_CALL: &str = r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.call","uuid":"u1","step":1,"toolCallId":"Bash_0","name":"Bash","args":{"command":"ls"}},"time":1101}"#;
const TOOL_RESULT: &str = r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.result","parentUuid":"u1","toolCallId":"Bash_0","result":{"output":"a.py"}},"time":1102}"#;

/// A turn: a prompt, a request that runs a tool (usage three times), two rate-limited
/// attempts, the request that ends the turn, and the replay of both replies.
fn session() -> Vec<String> {
    let (a, b) = ([100, 10, 50, 0], [20, 5, 150, 0]);
    let mut lines = vec![META.to_owned(), PROMPT.to_owned(), request("main", 1002)];
    lines.push(record("main", 1100, a, "turn"));
    lines.extend([
        TOOL_CALL.to_owned(),
        TOOL_RESULT.to_owned(),
        step_end(1103, a),
    ]);
    lines.extend(failed(1200));
    lines.extend(failed(1300));
    lines.push(request("main", 1400));
    lines.push(record("main", 1500, b, "turn"));
    lines.extend([step_end(1501, b), replay(1600, a), replay(1600, b)]);
    lines
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn fold_lines(lines: &[String]) -> Folded {
    fold(&group(&[("s/agents/main/wire.jsonl", text(lines))]))
}

#[test]
fn one_call_per_usage_record_never_the_step_end_or_replay_copies_nor_retries() {
    let folded = fold_lines(&session());
    let got: Vec<_> = folded
        .calls
        .iter()
        .map(|c| {
            let u = &c.usage;
            (
                c.usage.input,
                u.cache_read,
                u.cache_write,
                u.output,
                c.start_time,
                c.end_time,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Some(150),
                Some(50),
                Some(0),
                Some(10),
                Some(1002),
                Some(1100)
            ),
            (
                Some(170),
                Some(150),
                Some(0),
                Some(5),
                Some(1400),
                Some(1500)
            ),
        ]
    );
    assert!(folded
        .calls
        .iter()
        .all(|c| c.model.as_deref() == Some("kimi-k2.7-code")));
    assert!(folded
        .calls
        .iter()
        .all(|c| c.kind == "main" && c.final_usage));
    assert_eq!(folded.sessions.len(), 1);
    assert_eq!(folded.sessions[0].id, "s");
    assert_eq!(
        folded.sessions[0].lines,
        i64::try_from(session().len()).unwrap_or(0)
    );
    assert_eq!(folded.sessions[0].unknown_lines, 0);
    assert!(folded.issues.is_empty(), "{:?}", folded.issues);
    assert!(numbered(&folded));
}

#[test]
fn a_compaction_record_is_a_compaction_call_and_a_sub_agents_a_sub_agent_call() {
    let lines = vec![
        META.to_owned(),
        record("main", 10, [1, 1, 0, 0], "session"),
        request("agent-0", 11),
        record("agent-0", 12, [2, 1, 0, 0], "turn"),
    ];
    let folded = fold_lines(&lines);
    let kinds: Vec<_> = folded
        .calls
        .iter()
        .map(|c| (c.kind, c.agent_id.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        vec![("compaction", None), ("subagent", Some("agent-0"))]
    );
}

#[test]
fn a_sub_agents_wire_is_its_sessions_and_names_the_agent() {
    let lines = vec![
        META.to_owned(),
        request("agent-0", 11),
        record("agent-0", 12, [2, 1, 0, 0], "turn"),
    ];
    let files = group(&[
        ("S1/agents/main/wire.jsonl", text(&session())),
        ("S1/agents/agent-0/wire.jsonl", text(&lines)),
        (
            "S1/state.json",
            r#"{"id":"session_x","version":2,"cwd":"/w"}"#.to_owned(),
        ),
    ]);
    let folded = fold(&files[..2]);
    assert_eq!(folded.sessions.len(), 1);
    assert_eq!(folded.sessions[0].id, "session_x");
    assert_eq!(folded.sessions[0].cwd.as_deref(), Some("/w"));
    assert_eq!(
        (
            folded.sessions[0].main_calls,
            folded.sessions[0].subagent_calls
        ),
        (2, 1)
    );
}

#[test]
fn an_all_zero_record_or_one_without_usage_is_a_call_of_unknown_tokens() {
    let bare =
        r#"{"type":"usage.record","agentId":"main","model":"m","usageScope":"turn","time":6}"#;
    let lines = [
        META.to_owned(),
        record("main", 5, [0, 0, 0, 0], "turn"),
        bare.to_owned(),
    ];
    let folded = fold_lines(&lines);
    assert_eq!(folded.calls.len(), 2);
    for call in &folded.calls {
        assert!(!call.final_usage);
        assert_eq!((call.usage.input, call.usage.output), (None, None));
    }
    let issues: Vec<_> = folded.issues.iter().map(|i| (i.line, i.severity)).collect();
    assert_eq!(issues, vec![(Some(3), "warning")]);
}

#[test]
fn the_model_falls_back_to_the_alias_tail_never_the_env_placeholder() {
    let env = r#"{"type":"usage.record","agentId":"main","model":"__kimi_env_model__","usage":{"inputOther":1,"output":1,"inputCacheRead":0,"inputCacheCreation":0},"usageScope":"turn","time":7}"#;
    let folded = fold_lines(&[
        META.to_owned(),
        record("main", 5, [1, 1, 0, 0], "turn"),
        env.to_owned(),
    ]);
    let models: Vec<_> = folded.calls.iter().map(|c| c.model.as_deref()).collect();
    assert_eq!(models, vec![Some("kimi-k2.7-code"), None]);
}

#[test]
fn unknown_types_are_counted_and_an_unknown_protocol_is_a_warning() {
    let lines = vec![
        r#"{"type":"metadata","protocol_version":"2.0","created_at":1}"#.to_owned(),
        r#"{"type":"brand.new","agentId":"main","time":2}"#.to_owned(),
        r#"{"type":"brand.newer","time":3}"#.to_owned(),
        record("main", 4, [1, 2, 3, 0], "turn"),
    ];
    let folded = fold_lines(&lines);
    assert_eq!(folded.calls.len(), 1);
    assert_eq!(folded.sessions[0].unknown_lines, 2);
    let issues: Vec<_> = folded.issues.iter().map(|i| (i.line, i.severity)).collect();
    assert_eq!(issues, vec![(Some(1), "warning"), (Some(2), "warning")]);
    assert!(folded.issues[0].message.contains("\"2.0\""));
    assert!(folded.issues[1]
        .message
        .starts_with("2 line(s) of unknown type"));
}

#[test]
fn bad_lines_are_issues_and_the_rest_is_counted() {
    let good = record("main", 4, [1, 2, 3, 0], "turn");
    let data = format!("{META}\n{{\"type\":\x00\"x\n\n[1]\n{good}\n{{\"type\":\"usage.rec");
    let folded = fold(&group(&[("s/agents/main/wire.jsonl", data)]));
    assert_eq!(folded.calls.len(), 1);
    let errors = folded
        .issues
        .iter()
        .filter(|i| i.severity == "error")
        .count();
    assert_eq!(errors, 3);
}

#[test]
fn a_forks_copied_calls_yield_to_the_sources_own() {
    let source = session();
    let mut child = source.clone();
    child.push(r#"{"type":"forked","agentId":"main","time":2000}"#.to_owned());
    child.extend([
        request("main", 2100),
        record("main", 2200, [7, 7, 7, 0], "turn"),
    ]);
    let both = fold(&group(&[
        ("child/agents/main/wire.jsonl", text(&child)),
        ("src/agents/main/wire.jsonl", text(&source)),
    ]));
    let per: BTreeMap<_, _> = figures(&both).into_iter().map(|(s, f)| (s, f[0])).collect();
    assert_eq!(
        per,
        BTreeMap::from([("child".into(), 1), ("src".into(), 2)])
    );
    let alone = fold(&group(&[("child/agents/main/wire.jsonl", text(&child))]));
    assert_eq!(alone.calls.len(), 3);
}

use std::collections::BTreeMap;

#[test]
fn legacy_status_updates_are_calls_keyed_by_message_id() {
    let lines = vec![
        r#"{"type":"metadata","protocol_version":"1.3"}"#.to_owned(),
        r#"{"timestamp":1760000000.25,"message":{"type":"TurnBegin","payload":{"user_input":"hi"}}}"#.to_owned(),
        r#"{"timestamp":1760000001.5,"message":{"type":"StatusUpdate","payload":{"token_usage":{"input_other":10,"output":5,"input_cache_read":7,"input_cache_creation":1},"message_id":"m1"}}}"#.to_owned(),
        r#"{"timestamp":1760000001.6,"message":{"type":"StatusUpdate","payload":{"context_usage":0.2}}}"#.to_owned(),
        r#"{"timestamp":1760000002.0,"message":{"type":"SubagentEvent","payload":{"agent_id":"a1","event":{"type":"StatusUpdate","payload":{"token_usage":{"input_other":1,"output":2,"input_cache_read":0,"input_cache_creation":0},"message_id":"m2"}}}}}"#.to_owned(),
    ];
    let files = group(&[
        ("md5/uuid-1/wire.jsonl", text(&lines)),
        (
            "md5/uuid-1/context.jsonl",
            "{\"role\":\"_checkpoint\",\"id\":0}\n{\"role\":\"user\",\"content\":\"hi\"}\n"
                .to_owned(),
        ),
    ]);
    let folded = fold(&files);
    let got: Vec<_> = folded
        .calls
        .iter()
        .map(|c| {
            (
                c.kind,
                c.usage.input,
                c.usage.output,
                c.start_time,
                c.model.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("main", Some(18), Some(5), Some(1_760_000_001_500), None),
            ("subagent", Some(1), Some(2), Some(1_760_000_002_000), None),
        ]
    );
    assert_eq!(folded.sessions.len(), 1);
    assert_eq!(folded.sessions[0].id, "uuid-1");
    assert_eq!(folded.sessions[0].lines, 7);
    assert_eq!(folded.sessions[0].unknown_lines, 0);
    assert!(folded.issues.is_empty(), "{:?}", folded.issues);
}

#[test]
fn items_are_the_prompt_the_tool_call_and_its_result_not_the_replays() {
    let folded = fold_lines(&session());
    let got: Vec<_> = folded
        .items
        .iter()
        .map(|i| {
            (
                i.seq,
                i.kind,
                i.tool_call_id.as_deref(),
                i.tool_name.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, kind::PROMPT, None, None),
            // 2: the first call
            (3, kind::REPLY, Some("Bash_0"), None),
            (4, kind::TOOL_CALL, Some("Bash_0"), Some("Bash")),
            (5, kind::TOOL_OUTPUT, Some("Bash_0"), None),
            // 6: the second call
        ]
    );
    assert_eq!(folded.items[1].tool_request_bytes, Some(16));
    assert!(fold_with(
        &group(&[("s/agents/main/wire.jsonl", text(&session()))]),
        false
    )
    .items
    .is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, failure_persistence: None, ..proptest::prelude::ProptestConfig::default() })]

    /// A line written twice, or a prefix of the wire kept in another home (a resumed
    /// session's earlier copy, read before or after it), changes no figure.
    #[test]
    fn copies_and_resumed_prefixes_count_once(twice in 0usize..64, cut in 0usize..64) {
        let base = session();
        let wire = "S/agents/main/wire.jsonl";
        let folded = |files: &[(String, String)]| {
            let named: Vec<(&str, &String)> = files.iter().map(|(p, t)| (p.as_str(), t)).collect();
            figures(&fold(&group(&named)))
        };
        let expected = folded(&[(format!("a/{wire}"), text(&base))]);
        let mut doubled = base.clone();
        doubled.insert(twice % base.len(), base[twice % base.len()].clone());
        let prefix = text(&base[..=cut % base.len()]);
        proptest::prop_assert_eq!(&folded(&[(format!("a/{wire}"), text(&doubled))]), &expected);
        for files in [
            [(format!("a/{wire}"), text(&base)), (format!("b/{wire}"), prefix.clone())],
            [(format!("b/{wire}"), prefix.clone()), (format!("a/{wire}"), text(&base))],
        ] {
            proptest::prop_assert_eq!(&folded(&files), &expected);
        }
        proptest::prop_assert_eq!(expected.values().map(|f| f[0]).sum::<i64>(), 2);
    }
}
