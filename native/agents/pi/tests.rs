//! The pi fold's rules, each on literal lines.

use super::*;
use crate::fold::kind;
use crate::fold::testing::{copies_change_nothing, figures, group, numbered};
use proptest::prelude::*;

fn header(id: &str, t: &str, extra: &str) -> String {
    format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{t}","cwd":"/w"{extra}}}"#)
}

fn user(id: &str, t: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"{t}","message":{{"role":"user","content":[{{"type":"text","text":"go"}}],"timestamp":1}}}}"#
    )
}

/// An assistant line: entry `id` at `t`, its response id (none: `""`), stop reason and usage
/// (input, output, cache read, cache write).
fn reply(id: &str, t: &str, response: &str, stop: &str, u: [i64; 4]) -> String {
    let response = if response.is_empty() {
        String::new()
    } else {
        format!(r#","responseId":"{response}""#)
    };
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"p","timestamp":"{t}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"openai-codex-responses","provider":"openai-codex","model":"gpt-5.5","usage":{{"input":{},"output":{},"cacheRead":{},"cacheWrite":{},"totalTokens":{},"cost":{{"total":0.001}}}},"stopReason":"{stop}","timestamp":1779950623000{response}}}}}"#,
        u[0],
        u[1],
        u[2],
        u[3],
        u.iter().sum::<i64>()
    )
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn fold_texts(files: &[(&str, String)]) -> Folded {
    fold(&group(files))
}

/// A session `s1` of two calls.
fn session() -> Vec<String> {
    vec![
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        user("u1", "2026-05-01T10:00:01.000Z"),
        reply(
            "a1",
            "2026-05-01T10:00:02.000Z",
            "r1",
            "toolUse",
            [100, 10, 40, 5],
        ),
        reply(
            "a2",
            "2026-05-01T10:00:03.000Z",
            "r2",
            "stop",
            [20, 5, 140, 0],
        ),
    ]
}

#[test]
fn a_call_is_an_assistant_line_and_its_input_includes_the_cache() {
    let mut lines = session();
    lines[2] = lines[2].replace(r#""cacheWrite":5,"#, r#""cacheWrite":5,"reasoning":3,"#);
    lines[2] = lines[2].replace(r#""total":0.001"#, r#""total":1.5e-7"#);
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    assert_eq!(figures(&folded)["s1"], [2, 145 + 160, 180, 5, 0, 15, 3, 0]);
    let first = &folded.calls[0];
    assert_eq!(first.usage.input, Some(145));
    assert_eq!(first.usage.reasoning, Some(3));
    assert_eq!(folded.calls[1].usage.reasoning, None, "not logged: unknown");
    assert_eq!(first.api_call_id.as_deref(), Some("r1"));
    assert_eq!(first.provider.as_deref(), Some("openai-codex"));
    assert_eq!(first.model.as_deref(), Some("gpt-5.5"));
    assert_eq!(first.logged_cost.as_deref(), Some("0.00000015"));
    assert_eq!(folded.calls[1].logged_cost.as_deref(), Some("0.001"));
    assert_eq!(first.start_time, Some(1_779_950_623_000));
    assert_eq!(first.end_time, Some(1_777_629_602_000));
    assert!(first.final_usage && !first.interrupted);
    assert!(folded.issues.is_empty(), "{:?}", folded.issues);
    assert_eq!(folded.sessions[0].cwd.as_deref(), Some("/w"));
}

#[test]
fn a_fork_or_a_snapshot_repeats_calls_that_count_once_in_the_oldest_session() {
    let parent = session();
    // a /fork: new header (later, parentSession), the parent's entries copied, then its own
    let mut fork = vec![header(
        "f1",
        "2026-05-01T11:00:00.000Z",
        r#","parentSession":"/h/.pi/agent/sessions/--w--/2026-05-01T10-00-00-000Z_s1.jsonl""#,
    )];
    fork.extend(parent[1..].iter().cloned());
    fork.push(reply(
        "a3",
        "2026-05-01T11:00:05.000Z",
        "r3",
        "stop",
        [7, 1, 0, 0],
    ));
    for files in [
        vec![
            ("b/fork.jsonl", text(&fork)),
            ("a/parent.jsonl", text(&parent)),
        ],
        vec![
            ("a/parent.jsonl", text(&parent)),
            ("b/fork.jsonl", text(&fork)),
        ],
    ] {
        let folded = fold_texts(&files);
        let f = figures(&folded);
        assert_eq!(
            f["s1"],
            figures(&fold_texts(&[("p.jsonl", text(&parent))]))["s1"]
        );
        assert_eq!(f["f1"], [1, 7, 0, 0, 0, 1, 0, 0]);
        let fork_session = folded.sessions.iter().find(|s| s.id == "f1").expect("f1");
        assert_eq!(fork_session.parent.as_deref(), Some("s1"));
        assert_eq!(
            fork_session.start_time,
            Some(1_777_633_200_000),
            "copies do not move it"
        );
        assert!(numbered(&folded));
    }
    // the fork alone: the copied calls are its own then (nothing else paid for them here)
    assert_eq!(
        figures(&fold_texts(&[("f.jsonl", text(&fork))]))["f1"][0],
        3
    );
    // an earlier snapshot of the same file, and a byte-identical copy
    let snapshot = text(&parent[..3]);
    let folded = fold_texts(&[
        ("x/s.jsonl", snapshot),
        ("y/s.jsonl", text(&parent)),
        ("z/s.jsonl", text(&parent)),
    ]);
    assert_eq!(figures(&folded)["s1"][0], 2);
}

#[test]
fn calls_on_every_branch_of_the_tree_count() {
    let mut lines = session();
    // the user went back (/tree) and asked again from the first reply: a third call
    lines.push(
        user("u2", "2026-05-01T10:00:04.000Z").replace(r#""parentId":null"#, r#""parentId":"a1""#),
    );
    lines.push(reply(
        "a4",
        "2026-05-01T10:00:05.000Z",
        "r4",
        "stop",
        [1, 1, 0, 0],
    ));
    assert_eq!(
        figures(&fold_texts(&[("s.jsonl", text(&lines))]))["s1"][0],
        3
    );
}

#[test]
fn aborted_and_failed_requests_are_calls_with_their_zero_usage() {
    let lines = [
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        reply("a1", "2026-05-01T10:00:02.000Z", "r1", "aborted", [0; 4]),
        reply("a2", "2026-05-01T10:00:03.000Z", "", "error", [0; 4]),
        // the same failed line again (a copy): its key is its entry id and start
        reply("a2", "2026-05-01T10:00:03.000Z", "", "error", [0; 4]),
    ];
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    let calls: Vec<_> = folded
        .calls
        .iter()
        .map(|c| {
            (
                c.interrupted,
                c.final_usage,
                c.usage.output,
                c.api_call_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (true, false, Some(0), Some("r1")),
            (false, true, Some(0), Some("ea2@1779950623000")),
        ]
    );
    assert_eq!(folded.sessions[0].interrupted_calls, 1);
}

#[test]
fn each_header_starts_a_session_and_lines_before_one_are_the_file_names() {
    let lines = [
        reply("a0", "2026-05-01T09:00:00.000Z", "r0", "stop", [1, 1, 0, 0]),
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        reply("a1", "2026-05-01T10:00:02.000Z", "r1", "stop", [1, 1, 0, 0]),
        header("s2", "2026-05-01T10:01:00.000Z", ""),
        reply("a2", "2026-05-01T10:01:02.000Z", "r2", "stop", [2, 2, 0, 0]),
        header("s3", "2026-05-01T10:02:00.000Z", ""),
    ];
    let f = figures(&fold_texts(&[(
        "2026-05-01T08-00-00-000Z_named.jsonl",
        text(&lines),
    )]));
    assert_eq!(f["named"][0], 1);
    assert_eq!(f["s1"], [1, 1, 0, 0, 0, 1, 0, 0]);
    assert_eq!(f["s2"], [1, 2, 0, 0, 0, 2, 0, 0]);
    assert_eq!(f["s3"], [0; 8]);
}

#[test]
fn other_entries_are_not_calls_and_unknown_ones_are_counted() {
    let lines = [
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        r#"{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-05-01T10:00:00.500Z","provider":"openai-codex","modelId":"gpt-5.5"}"#.to_owned(),
        r#"{"type":"custom","customType":"session-postmortem","data":{"sessionStats":{"tokens":{"input":9,"output":9}}},"id":"c1","parentId":null,"timestamp":"2026-05-01T10:00:01.000Z"}"#.to_owned(),
        r#"{"type":"compaction","id":"k1","parentId":null,"timestamp":"2026-05-01T10:00:02.000Z","summary":"done","firstKeptEntryId":"x","tokensBefore":7509}"#.to_owned(),
        r#"{"type":"hologram","id":"h1","timestamp":"2026-05-01T10:00:03.000Z"}"#.to_owned(),
        r#"{"type":"message","id":"h2","timestamp":"2026-05-01T10:00:04.000Z","message":{"role":"oracle","usage":{"input":5}}}"#.to_owned(),
        r#"{"id":"h3"}"#.to_owned(),
    ];
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    assert!(folded.calls.is_empty());
    assert_eq!(folded.sessions[0].unknown_lines, 2);
    assert_eq!(folded.sessions[0].lines, 7, "every line is the session's");
    let issues: Vec<_> = folded.issues.iter().map(|i| (i.line, i.severity)).collect();
    assert_eq!(issues, vec![(Some(5), "warning"), (Some(7), "error")]);
    assert!(folded.issues[0].message.contains("hologram"));
}

#[test]
fn an_assistant_line_without_usage_is_a_call_of_unknown_tokens() {
    let lines = [
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        r#"{"type":"message","id":"a1","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[],"model":"gpt-5.5","stopReason":"stop","responseId":"r1"}}"#.to_owned(),
    ];
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    let call = &folded.calls[0];
    assert_eq!(
        (call.usage.input, call.usage.output, call.final_usage),
        (None, None, false)
    );
    assert_eq!(call.logged_cost, None);
    assert_eq!(folded.issues.len(), 1);
}

#[test]
fn bad_bytes_and_torn_lines_are_issues_and_the_rest_is_read() {
    let mut data = text(&session()).into_bytes();
    data.extend_from_slice(b"\x00\x00\x00\n{\"type\":\"message\",\"id\":\"a9\",\"timesta");
    let folded = fold(&group(&[("s.jsonl", data)]));
    assert_eq!(figures(&folded)["s1"][0], 2);
    assert_eq!(
        folded
            .issues
            .iter()
            .filter(|i| i.severity == "error")
            .count(),
        1
    );
}

#[test]
fn decimal_text_writes_numbers_plainly() {
    for (raw, plain) in [
        ("0.0037500000000000003", Some("0.0037500000000000003")),
        ("0", Some("0")),
        ("1.5e-7", Some("0.00000015")),
        ("-2E+3", Some("-2000")),
        ("1.25e1", Some("12.5")),
        ("12e-1", Some("1.2")),
        ("x", None),
        ("1e999", None),
    ] {
        assert_eq!(decimal_text(raw.as_bytes()).as_deref(), plain, "{raw}");
    }
}

#[test]
fn items_follow_the_conversation_and_a_call_stands_before_its_reply() {
    let lines = [
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        user("u1", "2026-05-01T10:00:01.000Z"),
        r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"ok"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}],"model":"gpt-5.5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"toolUse","timestamp":1777629601500,"responseId":"r1"}}"#.to_owned(),
        r#"{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-05-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a.py"}],"isError":false}}"#.to_owned(),
        r#"{"type":"compaction","id":"k1","parentId":"t1","timestamp":"2026-05-01T10:00:04.000Z","summary":"all done","firstKeptEntryId":"t1","tokensBefore":9}"#.to_owned(),
    ];
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    let rows: Vec<_> = folded
        .items
        .iter()
        .map(|i| {
            (
                i.seq,
                i.kind,
                i.tool_call_id.as_deref(),
                i.tool_name.as_deref(),
                i.content_bytes,
            )
        })
        .collect();
    let text_block = r#"{"type":"text","text":"ok"}"#.len();
    let call_block =
        r#"{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}"#.len();
    let size = |n: usize| Some(i64::try_from(n).expect("small"));
    assert_eq!(
        rows,
        vec![
            (
                1,
                kind::PROMPT,
                None,
                None,
                size(r#"[{"type":"text","text":"go"}]"#.len())
            ),
            // 2: the call
            (3, kind::REPLY, None, None, size(text_block + call_block)),
            (4, kind::TOOL_CALL, Some("c1"), Some("bash"), None),
            (
                5,
                kind::TOOL_OUTPUT,
                None,
                None,
                size(r#"[{"type":"text","text":"a.py"}]"#.len())
            ),
            (6, kind::COMPACTION, None, None, size(8)),
        ]
    );
    assert_eq!(folded.calls[0].seq, 2);
    assert_eq!(folded.items[1].tool_request_bytes, size(call_block));
    let twice = fold_texts(&[("a/s.jsonl", text(&lines)), ("b/s.jsonl", text(&lines))]);
    assert_eq!(twice.items.len(), folded.items.len());
    assert!(fold_with(&group(&[("s.jsonl", text(&lines))]), false)
        .items
        .is_empty());
}

/// A session of calls with the given (input, output).
fn calls(usage: &[(i64, i64)]) -> Vec<String> {
    let mut lines = vec![header("s1", "2026-05-01T10:00:00.000Z", "")];
    for (k, &(input, output)) in usage.iter().enumerate() {
        let t = format!("2026-05-01T10:{:02}:{:02}.000Z", 1 + k / 60, k % 60);
        lines.push(user(&format!("u{k}"), &t));
        lines.push(reply(
            &format!("a{k}"),
            &t,
            &format!("r{k}"),
            "stop",
            [input, output, 0, 0],
        ));
    }
    lines
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn copies_snapshots_and_forks_change_no_figure(
        usage in proptest::collection::vec((0i64..1000, 0i64..100), 1..8),
        twice in any::<usize>(),
        cut in any::<usize>(),
        own in proptest::collection::vec((1i64..1000, 0i64..100), 0..4),
    ) {
        let base = calls(&usage);
        let (expected, same) = copies_change_nothing(fold, &base, twice, cut);
        prop_assert!(same, "a line written twice or a snapshot of the file");
        let mut fork = vec![header("f1", "2026-05-01T12:00:00.000Z", r#","parentSession":"x_s1.jsonl""#)];
        fork.extend(base[1..].iter().cloned());
        for (k, &(i, o)) in own.iter().enumerate() {
            fork.push(reply(&format!("f{k}"), "2026-05-01T12:01:00.000Z", &format!("fr{k}"), "stop", [i, o, 0, 0]));
        }
        let folded = fold_texts(&[("f.jsonl", text(&fork)), ("s.jsonl", text(&base))]);
        let got = figures(&folded);
        prop_assert_eq!(&got["s1"], &expected["s1"]);
        let own_in: i64 = own.iter().map(|&(i, _)| i).sum();
        let own_out: i64 = own.iter().map(|&(_, o)| o).sum();
        let n = i64::try_from(own.len()).unwrap_or(0);
        prop_assert_eq!(got["f1"], [n, own_in, 0, 0, 0, own_out, 0, 0]);
        prop_assert!(numbered(&folded));
    }
}

#[test]
fn shell_commands_custom_messages_and_instructions_are_items_too() {
    let bash = |id: &str, excluded: bool| {
        format!(
            r#"{{"type":"message","id":"{id}","timestamp":"2026-05-01T10:00:01.000Z","message":{{"role":"bashExecution","command":"ls","output":"a","excludeFromContext":{excluded}}}}}"#
        )
    };
    let system = r#"{"type":"message","id":"y1","timestamp":"2026-05-01T10:00:00.500Z","message":{"role":"system","content":"","sections":{"a":"b"}}}"#;
    let custom = r#"{"type":"custom_message","id":"c1","timestamp":"2026-05-01T10:00:02.000Z","customType":"x","content":"note","display":true}"#;
    let lines = [
        header("s1", "2026-05-01T10:00:00.000Z", ""),
        system.to_owned(),
        bash("b1", false),
        bash("b2", true),
        custom.to_owned(),
    ];
    let folded = fold_texts(&[("s.jsonl", text(&lines))]);
    let rows: Vec<_> = folded
        .items
        .iter()
        .map(|i| (i.kind, i.event_id.as_deref(), i.content_bytes))
        .collect();
    let message = |line: &str| {
        let start = line.find(r#"{"role""#).expect("a message");
        Some(i64::try_from(line.len() - start - 1).expect("small"))
    };
    assert_eq!(
        rows,
        vec![
            (kind::SYSTEM, Some("y1"), message(system)),
            (kind::PROMPT, Some("b1"), message(&bash("b1", false))),
            (kind::PROMPT, Some("c1"), Some(6)),
        ]
    );
}
