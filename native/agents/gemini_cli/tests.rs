//! The fold's rules on literal records; the Python tests (`tests/agents/gemini_cli/`) hold
//! the rest and the real recordings.

use super::*;
use crate::fold::testing::{copies_change_nothing, figures, group, numbered};
use proptest::prelude::*;

const HEADER: &str = r#"{"sessionId":"s1","projectHash":"ab","startTime":"2026-06-12T10:00:00.000Z","lastUpdated":"2026-06-12T10:00:00.000Z","kind":"main"}"#;

/// A gemini reply `id` with (input, output, cached, thoughts, tool) tokens.
fn reply(id: &str, t: [i64; 5], tools: bool) -> String {
    let calls = if tools {
        r#","toolCalls":[{"id":"x_1","name":"glob","args":{"pattern":"*"},"result":[]}]"#
    } else {
        ""
    };
    format!(
        r#"{{"id":"{id}","timestamp":"2026-06-12T10:00:0{}.000Z","type":"gemini","content":"ok","tokens":{{"input":{},"output":{},"cached":{},"thoughts":{},"tool":{},"total":{}}},"model":"gemini-3.5-flash"{calls}}}"#,
        id.len() % 10,
        t[0],
        t[1],
        t[2],
        t[3],
        t[4],
        t.iter().sum::<i64>() - t[2]
    )
}

fn prompt(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","timestamp":"2026-06-12T10:00:00.500Z","type":"user","content":[{{"text":"go"}}]}}"#
    )
}

fn fold_lines(lines: &[String]) -> Folded {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fold(&group(&[("chats/session-1.jsonl", text)]))
}

#[test]
fn upserts_checkpoints_and_rewinds_count_each_reply_once() {
    let a = reply("a", [100, 5, 40, 7, 0], false);
    let b = reply("bb", [200, 3, 0, 2, 11], false);
    let lines = vec![
        HEADER.to_owned(),
        prompt("u1"),
        a.clone(),
        reply("a", [100, 5, 40, 7, 0], true),
        prompt("u2"),
        b,
        r#"{"$rewindTo":"u2"}"#.to_owned(),
        format!(r#"{{"$set":{{"messages":[{},{a}]}}}}"#, prompt("u1")),
    ];
    let folded = fold_lines(&lines);
    // input = prompt + tool use; output = output + thoughts
    assert_eq!(figures(&folded)["s1"], [2, 311, 40, 0, 0, 17, 9, 0]);
    assert!(folded.issues.is_empty(), "{:?}", folded.issues);
    assert!(numbered(&folded));
    let ids: Vec<_> = folded.calls.iter().map(|c| c.api_call_id.clone()).collect();
    assert_eq!(ids, [Some("a".to_owned()), Some("bb".to_owned())]);
    assert!(folded.calls.iter().all(|c| c.usage.cache_write.is_none()));
}

#[test]
fn a_legacy_document_reads_its_messages_at_their_lines() {
    let doc = format!(
        "{{\n  \"sessionId\": \"s1\",\n  \"projectHash\": \"ab\",\n  \"messages\": [\n    {},\n    {}\n  ]\n}}\n",
        prompt("u1"),
        reply("a", [10, 1, 0, 2, 0], false)
    );
    let files = group(&[("chats/session-1.json", doc)]);
    let folded = fold(&files);
    assert_eq!(figures(&folded)["s1"], [1, 10, 0, 0, 0, 3, 2, 0]);
    assert_eq!(folded.calls.first().map(|c| c.line), Some(6));
    assert_eq!(folded.sessions.first().map(|s| s.lines), Some(8));
}

#[test]
fn a_subagent_file_joins_the_parent_named_by_its_folder() {
    let child = [
        HEADER
            .replace(r#""s1""#, r#""c1""#)
            .replace("main", "subagent"),
        reply("a", [10, 1, 0, 0, 0], false),
    ]
    .join("\n");
    let files = group(&[("chats/p1/c1.jsonl", child)]);
    let folded = fold(&files);
    let call = folded.calls.first().cloned().unwrap_or_default();
    assert_eq!(
        (call.session.as_str(), call.kind, call.agent_id.as_deref()),
        ("p1", "subagent", Some("c1"))
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// A recording's figures stay the same with a line written twice, and with its first
    /// lines copied into a second file (a resume): each reply is counted once.
    #[test]
    fn copies_count_once(
        replies in proptest::collection::vec((1i64..1000, 0i64..100, 0i64..50), 1..5),
        twice in any::<usize>(),
        cut in any::<usize>(),
    ) {
        let mut base = vec![HEADER.to_owned()];
        for (k, &(input, output, thoughts)) in replies.iter().enumerate() {
            base.push(prompt(&format!("u{k}")));
            base.push(reply(&format!("g{k}"), [input, output, 0, thoughts, 0], k % 2 == 0));
        }
        let (expected, same) = copies_change_nothing(fold, &base, twice, cut);
        prop_assert!(same);
        let n = i64::try_from(replies.len()).unwrap_or(0);
        prop_assert_eq!(expected["s1"][0], n);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A legacy document of any bytes, or a real-looking one cut or damaged anywhere, folds
    /// without a panic; a document that cannot be read is an issue.
    #[test]
    fn a_damaged_legacy_document_never_panics(
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        cut in any::<usize>(),
        at in any::<usize>(),
    ) {
        let mut doc = format!(
            "{{\"sessionId\":\"s1\",\"projectHash\":\"ab\",\"messages\":[{},{}]}}",
            prompt("u1"),
            reply("a", [10, 1, 0, 2, 0], true)
        )
        .into_bytes();
        doc.truncate(cut % (doc.len() + 1));
        let place = at % (doc.len() + 1);
        doc.splice(place..place, noise.iter().copied());
        let files = group(&[("chats/session-1.json", doc)]);
        let folded = fold(&files);
        prop_assert!(folded.calls.len() <= 1);
        prop_assert!(!folded.issues.is_empty() || !folded.sessions.is_empty());
    }
}
