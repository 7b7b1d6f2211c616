"""The log's own prices: read from literal lines, reconciled, priced with, and round-tripped."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sqlite3
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from analytics.agents.copilot.log_prices import log_prices
from analytics.agents.copilot.tables import PASS_CALLS, PASS_SESSIONS
from analytics.cli.commands import app
from analytics.core.errors import AgentcostError
from analytics.core.pricing.learned import learned_prices, learned_rate_table, learned_toml
from analytics.core.pricing.price import price_analysis
from analytics.core.pricing.rates import load_rate_table, load_rates, parse_rate_table
from analytics.core.schema import ISSUES, LOG_PRICES, combine, padded
from analytics.engine.analyze import analyze
from tests.oracle.reference.events import priced_lines

SONNET_55 = [  # the usage_record of modelog-1.0.94-usage-record, verbatim prices
    ("input", 4, 200_000_000_000),
    ("cache_read", 0, 10_000_000_000),
    ("cache_write", 25_717, 250_000_000_000),
    ("output", 60, 1_000_000_000_000),
]
PRICED_CALLS = combine(PASS_CALLS, {"is_byok": pl.Boolean()})


def details(entries: list[tuple[str, int, int]], model: str | None, batch: int = 10**6) -> str:
    """A ``tokenDetails`` list as the CLI writes it (``model`` left out when None)."""
    rows = [
        {"batchSize": batch, "costPerBatch": cost, "tokenCount": count, "tokenType": kind}
        | ({"model": model} if model else {})
        for kind, count, cost in entries
    ]
    return json.dumps(rows)


def events(*rows: dict[str, Any]) -> pl.DataFrame:
    """The priced lines of EVENTS-like rows (``is_byok`` and ``token_details``), as the
    engine's pass finds them (its reference, ``tests.oracle.reference.events.priced_lines``): what
    ``log_prices`` reads."""
    base = {
        "source_file": "e.jsonl",
        "session_id": "s1",
        "timestamp": None,
        "model": None,
        "is_byok": False,
    }
    frame = pl.DataFrame(
        [base | {"source_line": i + 1} | row for i, row in enumerate(rows)],
        schema_overrides={"timestamp": pl.Datetime("ms", "UTC"), "token_details": pl.String()},
    )
    return priced_lines(frame)


def at(day: int) -> datetime:
    return datetime(2026, 10, day, 12, tzinfo=UTC)


# ------------------------------------------------------------------------- reading the prices


def test_usage_record_entries_are_prices() -> None:
    out = log_prices(
        events({"token_details": details(SONNET_55, "claude-sonnet-5.5")}), pl.DataFrame()
    )
    assert out.schema == pl.Schema(LOG_PRICES)
    assert out.select("model", "token_type", "cost_per_batch", "batch_size").rows() == [
        ("claude-sonnet-5.5", kind, str(cost), 10**6) for kind, _, cost in SONNET_55
    ]


@pytest.mark.parametrize(
    ("row", "prices"),
    [
        # 1.0.63 shutdowns: an object of token counts, no prices
        ({"token_details": '{"input": {"tokenCount": 15}, "output": {"tokenCount": 185}}'}, 0),
        ({"token_details": None}, 0),
        ({"token_details": "[]"}, 0),
        # an entry without its own model is the line's model
        ({"token_details": details(SONNET_55[:1], None), "model": "gpt-x"}, 1),
        # no model anywhere: no price
        ({"token_details": details(SONNET_55[:1], None)}, 0),
        # BYOK calls are not billed by Copilot: their entries price nothing
        ({"token_details": details(SONNET_55, "m"), "is_byok": True}, 0),
        # an unknown token type, or a missing price, is not a price
        ({"token_details": details([("audio", 1, 5)], "m")}, 0),
        ({"token_details": '[{"tokenType": "input", "model": "m", "batchSize": 1}]'}, 0),
    ],
)
def test_shapes_without_usable_prices(row: dict[str, Any], prices: int) -> None:
    assert log_prices(events(row), pl.DataFrame()).height == prices


def test_store_rows_give_prices_with_the_rows_model() -> None:
    rows = pl.DataFrame(
        {
            "source_file": ["session-store.db"],
            "source_line": [7],
            "session_id": ["s2"],
            "model": ["Claude-Haiku-4.5"],
            "created_at": [at(3)],
            "token_details": [details([("output", 114, 500_000_000_000)], None)],
        }
    )
    out = log_prices(pl.DataFrame(), rows)
    assert out.select("source_line", "session_id", "timestamp", "model").row(0) == (
        7,
        "s2",
        at(3),
        "claude-haiku-4.5",
    )


# ------------------------------------------------------------------------- reconciling them


def sightings(*lines: tuple[datetime | None, list[tuple[str, int, int]]]) -> pl.DataFrame:
    rows = [{"timestamp": when, "token_details": details(e, "m")} for when, e in lines]
    return log_prices(events(*rows), pl.DataFrame())


def test_agreeing_sightings_give_one_price_and_no_issue() -> None:
    learned, issues = learned_prices(sightings((at(1), SONNET_55), (at(2), SONNET_55)))
    assert learned.filter(pl.col("token_type") == "output").select(
        "credits_per_million", "sightings", "prices_seen", "source_line"
    ).row(0) == ("1000", 2, 1, 2)
    assert issues.is_empty() and issues.schema == pl.Schema(ISSUES)


def test_disagreeing_sightings_use_the_newest_and_say_so() -> None:
    cheaper = [("output", 1, 800_000_000_000)]
    learned, issues = learned_prices(
        sightings((at(5), cheaper), (at(9), SONNET_55[3:]), (at(7), cheaper))
    )
    assert learned["credits_per_million"].to_list() == ["1000"]
    assert issues.select("line", "severity").rows() == [(2, "warning")]
    message = issues["message"].item()
    assert "2 prices for m output tokens" in message
    assert "1000 AI credits per million tokens here (2026-10-09T12:00:00Z)" in message
    assert "800 at e.jsonl:3 (2026-10-07T12:00:00Z)" in message
    assert "uses the newest, 1000" in message


def test_the_same_price_in_other_batch_sizes_is_no_conflict() -> None:
    per_thousand = log_prices(
        events({"token_details": details([("output", 1, 1_000_000_000)], "m", batch=1000)}),
        pl.DataFrame(),
    )
    both = pl.concat([sightings((at(1), SONNET_55[3:])), per_thousand])
    learned, issues = learned_prices(both)
    assert learned["credits_per_million"].to_list() == ["1000"] and issues.is_empty()


def test_a_price_that_cannot_be_exact_is_an_error_and_left_out() -> None:
    prices = log_prices(
        events({"token_details": details([("input", 1, 1), ("output", 1, 2)], "m", batch=3)}),
        pl.DataFrame(),
    )
    learned, issues = learned_prices(prices)
    assert learned.is_empty()
    assert issues["severity"].to_list() == ["error", "error"]
    assert "never rounded" in issues["message"][0]
    assert learned_rate_table(prices) is None


# ------------------------------------------------------------------------- as a rate table


def test_learned_table_round_trips_through_toml() -> None:
    prices = sightings((at(9), SONNET_55))
    table = learned_rate_table(prices)
    assert table is not None
    model = table.resolve("m")
    assert (
        model is not None
        and model.source == "the log's own prices: e.jsonl:1 (session s1, 2026-10-09T12:00:00Z)"
    )
    assert str(table.checked) == "2026-10-09"
    text = learned_toml(prices)
    assert text.startswith("# `agentcost rates learn`: 4 prices seen in 1 session.")
    assert parse_rate_table(text, name="log-rates") == table


def test_a_model_without_input_and_output_prices_is_left_out() -> None:
    with pytest.raises(AgentcostError, match="no complete price"):
        learned_toml(sightings((at(1), SONNET_55[:3])))


# ------------------------------------------------------------------------- pricing with them


def calls(*rows: dict[str, Any]) -> pl.DataFrame:
    """Copilot's calls (with each one's bill) from partial rows; unknown columns stay null."""
    base = {
        "session_id": "s1",
        "input_tokens": 25_721,
        "cache_read_tokens": 0,
        "cache_write_tokens": 25_717,
        "output_tokens": 60,
        "reasoning_tokens": 0,
        "token_source": "observed",
        "is_byok": False,
    }
    return padded(pl.DataFrame([base | row for row in rows]), PRICED_CALLS)


def sessions(*ids: str, billed: str | None = None) -> pl.DataFrame:
    return padded(pl.DataFrame({"session_id": list(ids), "billed_nano_aiu": billed}), PASS_SESSIONS)


COPILOT = load_rate_table("github-copilot")
WITHOUT_SONNET_55 = dataclasses.replace(
    COPILOT, models=tuple(m for m in COPILOT.models if m.id != "claude-sonnet-5.5")
)
MODELOG_PRICES = sightings((at(9), SONNET_55)).with_columns(
    pl.lit("claude-sonnet-5.5").alias("model")
)


def test_a_model_the_table_lacks_is_priced_from_the_log_and_says_where_from() -> None:
    frame = calls(
        {"model": "claude-sonnet-5.5", "billed_nano_aiu": "6490050000"},
        {"model": "claude-sonnet-5.5", "session_id": "s2"},
        {"model": "claude-haiku-4.5", "cache_write_tokens": 0},
    )
    priced, per_session = price_analysis(
        frame, sessions("s1", "s2"), WITHOUT_SONNET_55, log_prices=MODELOG_PRICES
    )
    assert priced["cost_source"].to_list() == ["log_rates", "log_rates", "rates"]
    assert priced["price_from"].to_list()[1:] == [
        "the log's own prices: e.jsonl:1 (session s1, 2026-10-09T12:00:00Z)",
        "github-copilot",
    ]
    assert priced["rates"].unique().to_list() == ["github-copilot"]
    # its own bill, to the nano-AIU; and another session's call of that model at that price
    assert priced["cost_usd"][0] == priced["billed_usd"][0] == Decimal("0.0649005")
    assert priced["cost_usd"][1] == Decimal("0.0649005")
    assert per_session.sort("session_id")["cost_source"].to_list() == ["log_rates", "log_rates"]


def test_the_table_wins_over_the_log_and_other_tables_ignore_it() -> None:
    different = MODELOG_PRICES.with_columns(pl.lit("claude-haiku-4.5").alias("model"))
    frame = calls({"model": "claude-haiku-4.5"}, {"model": "claude-sonnet-5.5"})
    priced, _ = price_analysis(frame, sessions("s1"), COPILOT, log_prices=different)
    assert priced["cost_source"].to_list() == ["rates", "rates"]
    # A model the anthropic table lacks stays unpriced there, whatever the log quotes for it.
    quoted = MODELOG_PRICES.with_columns(pl.lit("claude-unlisted-9").alias("model"))
    unlisted = calls({"model": "claude-haiku-4.5"}, {"model": "claude-unlisted-9"})
    anthropic, _ = price_analysis(
        unlisted, sessions("s1"), load_rate_table("anthropic"), log_prices=quoted
    )
    assert anthropic["cost_source"].to_list() == ["rates", None]


def test_learned_toml_loaded_back_prices_the_calls_to_their_bills(tmp_path: Path) -> None:
    file = tmp_path / "learned.toml"
    file.write_text(learned_toml(MODELOG_PRICES))
    frame = calls({"model": "claude-sonnet-5.5", "billed_nano_aiu": "6490050000"})
    for spec in (str(file), f"github-copilot+{file}"):
        priced, _ = price_analysis(frame, sessions("s1"), load_rates(spec))
        assert priced["cost_usd"].to_list() == priced["billed_usd"].to_list(), spec


# ------------------------------------------------------------------------- bring your own key


def test_byok_calls_cost_their_providers_price_and_copilot_bills_nothing() -> None:
    frame = calls(
        {"model": "claude-sonnet-4.6", "is_byok": True},
        {"model": "gpt-5.4", "is_byok": True, "session_id": "s2"},
        {"model": "qwen3:0.6b", "is_byok": True, "session_id": "s3"},
        {"model": "claude-haiku-4.5", "session_id": "s4", "billed_nano_aiu": "3215050000"},
        {"model": "qwen3:0.6b", "is_byok": True, "session_id": "s4"},
    )
    priced, per_session = price_analysis(
        frame, sessions("s1", "s2", "s3", "s4", billed="0"), COPILOT
    )
    assert priced["cost_source"].to_list() == [
        "byok_provider",
        "byok_provider",
        None,
        "rates",
        None,
    ]
    assert priced["price_from"].to_list() == ["anthropic", "openai", None, "github-copilot", None]
    # claude-sonnet-4-6 at $3 / $3.75 / $15 per million: the provider's price, not Copilot's
    assert priced["cost_usd"][0] == 4 * Decimal("3e-6") + 25_717 * Decimal(
        "3.75e-6"
    ) + 60 * Decimal("15e-6")
    assert priced["billed_usd"].to_list()[:3] == [Decimal(0)] * 3
    rows = {r["session_id"]: r for r in per_session.iter_rows(named=True)}
    assert [rows[s]["cost_source"] for s in ("s1", "s2", "s3")] == [
        "byok_provider",
        "byok_provider",
        "unpriced",
    ]
    assert rows["s3"]["cost_usd"] is None and rows["s3"]["unpriced_models"] == ["qwen3:0.6b"]
    # Copilot charges nothing for BYOK calls: what it charges equals its bill of 0
    assert rows["s1"]["cost_minus_billed_usd"] == rows["s3"]["cost_minus_billed_usd"] == 0
    # a BYOK call left unpriced is never covered by the Copilot bill
    assert rows["s4"]["cost_source"] == "partial"


def test_byok_calls_under_another_table_are_priced_like_any_call() -> None:
    frame = calls({"model": "claude-sonnet-4.6", "is_byok": True})
    priced, _ = price_analysis(frame, sessions("s1"), load_rate_table("anthropic"))
    assert priced["cost_source"].to_list() == ["rates"]
    assert priced["billed_usd"].to_list() == [Decimal(0)]


# ------------------------------------------------------------------------- properties

counts = st.integers(min_value=0, max_value=10**9)
#: Batch prices whose per-token dollars fit MONEY: any integer cost per batch, batch sizes
#: 2^a x 5^b up to 10^7 (1, 2, 4, 25, 1000, 10^6, ...).
batch_prices = st.tuples(
    st.integers(min_value=0, max_value=10**13),
    st.builds(lambda a, b: 2**a * 5**b, st.integers(0, 7), st.integers(0, 7)),
)


@given(
    st.lists(st.tuples(counts, counts, counts, counts), min_size=1, max_size=4),
    st.lists(batch_prices, min_size=4, max_size=4),
)
def test_learned_prices_reproduce_total_nano_aiu_exactly(
    token_rows: list[tuple[int, int, int, int]], prices: list[tuple[int, int]]
) -> None:
    kinds = ["input", "cache_read", "cache_write", "output"]
    line = [
        {
            "tokenType": k,
            "tokenCount": 0,
            "costPerBatch": c,
            "batchSize": b,
            "model": "new-model",
        }
        for k, (c, b) in zip(kinds, prices, strict=True)
    ]
    seen = log_prices(events({"token_details": json.dumps(line)}), pl.DataFrame())
    rows = [
        {
            "model": "new-model",
            "input_tokens": u + r + w,
            "cache_read_tokens": r,
            "cache_write_tokens": w,
            "output_tokens": o,
        }
        for u, r, w, o in token_rows
    ]
    priced, _ = price_analysis(calls(*rows), sessions("s1"), COPILOT, log_prices=seen)
    with localcontext(prec=80):
        for (u, r, w, o), cost in zip(token_rows, priced["cost_usd"], strict=True):
            nano = sum(
                (Decimal(n) * c / b for n, (c, b) in zip((u, r, w, o), prices, strict=True)),
                Decimal(0),
            )
            assert cost == nano.scaleb(-11)
    assert parse_rate_table(learned_toml(seen), name="log-rates") == learned_rate_table(seen)


@given(
    st.lists(
        st.tuples(
            counts,
            counts,
            st.sampled_from(
                ["claude-sonnet-5.5", "claude-haiku-4.5", "claude-sonnet-4.6", "qwen3"]
            ),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.data(),
)
def test_cost_is_additive_over_any_partition_of_calls(
    rows: list[tuple[int, int, str, bool]], data: st.DataObject
) -> None:
    frame = calls(
        *(
            {
                "model": m,
                "input_tokens": i,
                "cache_write_tokens": 0,
                "output_tokens": o,
                "is_byok": b,
            }
            for i, o, m, b in rows
        )
    )

    def total(part: pl.DataFrame) -> Decimal:
        priced, _ = price_analysis(
            part, sessions("s1"), WITHOUT_SONNET_55, log_prices=MODELOG_PRICES
        )
        return sum(priced["cost_usd"].drop_nulls().to_list(), Decimal(0))

    groups = data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows)))
    group = pl.Series(groups, dtype=pl.Int64)
    parts = [frame.filter(group == k) for k in range(3)]
    assert sum((total(p) for p in parts), Decimal(0)) == total(frame)


# ------------------------------------------------------------------------- real logs


def copilot_home(real_logs: Path, into: Path) -> Path:
    """aiusage-core as a Copilot home: its events.jsonl and a session-store.db of usage.sql."""
    source = real_logs / "aiusage-core-session-store-1.0.80"
    state = into / "session-state" / "11111111-2222-4333-8444-555555555555"
    state.mkdir(parents=True)
    shutil.copyfile(source / "events.jsonl", state / "events.jsonl")
    sql = (source / "usage.sql").read_text()
    columns = re.search(r"INSERT INTO assistant_usage_events \(([^)]*)\)", sql)
    assert columns is not None
    with sqlite3.connect(into / "session-store.db") as db:
        db.execute("CREATE TABLE schema_version (version INTEGER)")
        db.execute("INSERT INTO schema_version VALUES (8)")
        db.execute(f"CREATE TABLE assistant_usage_events ({columns.group(1)})")
        db.executescript(sql)
    return into


def test_rates_learn_on_a_real_store_round_trips_to_its_bills(
    real_logs: Path, tmp_path: Path
) -> None:
    home = copilot_home(real_logs, tmp_path / "home")
    learned = tmp_path / "learned.toml"
    runner = CliRunner()
    out = runner.invoke(app, ["--no-cache", "rates", "learn", str(home), "--output", str(learned)])
    assert out.exit_code == 0, out.output
    table = load_rates(str(learned))
    assert [m.id for m in table.models] == ["claude-haiku-4.5", "gpt-5-mini"]
    # the same prices as the bundled table, which the logs themselves confirm
    for model in table.models:
        bundled = COPILOT.resolve(model.id)
        assert bundled is not None and bundled.periods[0].prices == model.periods[0].prices
    for spec in (str(learned), f"github-copilot+{learned}"):
        result = runner.invoke(
            app, ["--no-cache", "analyze", str(home), "--format", "json", "--rates", spec]
        )
        assert result.exit_code == 0, result.output
        (session,) = json.loads(result.stdout)["sessions"]
        assert session["cost_usd"] == session["billed_usd"] == "0.189131700000000000", spec


def test_modelog_usage_record_priced_from_its_own_prices_equals_its_bill(real_logs: Path) -> None:
    """claude-sonnet-5.5 as if the table did not know it: the log's prices give the bill."""
    result = analyze([real_logs / "modelog-1.0.94-usage-record" / "single-turn-session.jsonl"])
    record = result.events.filter(pl.col("event_type") == "session.usage_record")
    frame = calls(
        *record.select(
            "session_id",
            "model",
            "input_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "output_tokens",
            "reasoning_tokens",
            pl.col("nano_aiu").alias("billed_nano_aiu"),
            "is_byok",
        ).to_dicts()
    )
    assert (frame["input_tokens"].item(), frame["output_tokens"].item()) == (25_721, 60)
    priced, _ = price_analysis(
        frame, sessions("s1"), WITHOUT_SONNET_55, log_prices=result.log_prices
    )
    assert priced.select("cost_usd", "billed_usd", "cost_source").row(0) == (
        Decimal("0.0649005"),
        Decimal("0.0649005"),
        "log_rates",
    )
    assert "single-turn-session.jsonl:7" in priced["price_from"].item()
    bundled, _ = price_analysis(frame, sessions("s1"), COPILOT, log_prices=result.log_prices)
    assert bundled.select("cost_usd", "cost_source").row(0) == (Decimal("0.0649005"), "rates")


def test_lantern_byok_session_costs_copilot_nothing_and_stays_unpriced(real_logs: Path) -> None:
    """A local Ollama model over BYOK (its shutdown: tokens, totalNanoAiu 0): the Copilot bill
    is 0, the user's cost unknown, never $0."""
    out = CliRunner().invoke(
        app, ["--no-cache", "analyze", str(real_logs / "lantern-byok-1.0.78"), "-f", "json"]
    )
    assert out.exit_code == 0, out.output
    (session,) = json.loads(out.stdout)["sessions"]
    assert session["byok"] is True
    assert (session["billed_usd"], session["cost_usd"]) == ("0.000000000000000000", None)
    assert (session["cost_source"], session["unpriced_calls"]) == ("unpriced", 2)
    assert session["unpriced_models"] == ["qwen3:0.6b"]
    assert session["cost_minus_billed_usd"] == "0.000000000000000000"  # Copilot charged 0


def test_a_session_without_calls_costs_zero() -> None:
    frame = calls({"model": "claude-sonnet-4.6"})
    _, per_session = price_analysis(frame, sessions("s1", "s2", billed="0"), COPILOT)
    empty_session = per_session.filter(pl.col("session_id") == "s2").row(0, named=True)
    assert (empty_session["cost_usd"], empty_session["cost_source"]) == (Decimal(0), "rates")
    assert empty_session["cost_minus_billed_usd"] == 0


def usage_record(second: int, model: str, output_price: int) -> dict[str, Any]:
    """A ``session.usage_record`` line for one call of ``model`` (prices per million tokens)."""
    prices = [("input", 4, 300_000_000_000), ("output", 60, output_price)]
    return {
        "type": "session.usage_record",
        "timestamp": f"2026-11-0{second}T10:00:00.000Z",
        "data": {
            "usage": {
                "model": model,
                "provider": {"id": "copilot"},
                "inputTokens": 4,
                "outputTokens": 60,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "isByok": False,
                "apiCallId": f"msg_{second}",
                "accounting": {"usageId": f"msg_{second}"},
                "copilotUsage": {
                    "tokenDetails": json.loads(details(prices, model)),
                    "totalNanoAiu": 4 * 300_000 + 60 * output_price // 10**6,
                },
            }
        },
    }


def session_log(root: Path, session: str, day: int, *lines: dict[str, Any]) -> None:
    stamp = f"2026-11-0{day}T09:59:00.000Z"
    start = {"type": "session.start", "timestamp": stamp, "data": {"sessionId": session}}
    turn = {"type": "assistant.turn_start", "timestamp": stamp, "data": {"turnId": "0"}}
    end = {"type": "assistant.turn_end", "timestamp": stamp, "data": {"turnId": "0"}}
    message = {
        "type": "assistant.message",
        "timestamp": stamp,
        "data": {"model": "new-model", "content": "ok", "outputTokens": 60},
    }
    path = root / session / "events.jsonl"
    path.parent.mkdir(parents=True)
    text = [json.dumps(line) for line in (start, turn, *lines, message, end)]
    path.write_text("\n".join(text) + "\n")


def test_prices_from_one_session_price_another_and_a_change_is_an_issue(tmp_path: Path) -> None:
    session_log(tmp_path, "old", 1, usage_record(1, "new-model", 1_500_000_000_000))
    session_log(tmp_path, "new", 2, usage_record(2, "new-model", 1_200_000_000_000))
    session_log(tmp_path, "none", 3)  # no usage record: priced from the others' prices
    out = CliRunner().invoke(app, ["--no-cache", "analyze", str(tmp_path), "--calls", "-f", "json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    newest = str(tmp_path / "new" / "events.jsonl") + ":3"
    for call in report["calls"]:
        assert call["cost_source"] == "log_rates", call
        assert call["price_from"].startswith(f"the log's own prices: {newest} (session new,")
    (issue,) = [i for i in report["issues"] if "prices for new-model" in i["message"]]
    assert (issue["file"], issue["line"], issue["severity"]) == (newest[:-2], 3, "warning")
    assert "1500 at " in issue["message"] and "uses the newest, 1200." in issue["message"]


def test_modelog_through_the_cli_costs_its_bill_and_learned_rates_round_trip(
    real_logs: Path, tmp_path: Path
) -> None:
    """1 call, observed (input 25,721, output 60), billed $0.0649005 = its cost: under the
    bundled table, under the learned table alone, and under github-copilot+learned."""
    log = str(real_logs / "modelog-1.0.94-usage-record" / "single-turn-session.jsonl")
    learned = tmp_path / "learned.toml"
    runner = CliRunner()
    out = runner.invoke(app, ["--no-cache", "rates", "learn", log, "-o", str(learned)])
    assert out.exit_code == 0, out.output
    for rates in ("github-copilot", str(learned), f"github-copilot+{learned}"):
        out = runner.invoke(
            app, ["--no-cache", "analyze", log, "--calls", "-f", "json", "--rates", rates]
        )
        assert out.exit_code == 0, out.output
        (call,) = json.loads(out.stdout)["calls"]
        assert (call["input_tokens"], call["output_tokens"], call["token_source"]) == (
            25_721,
            60,
            "observed",
        )
        assert call["cost_usd"] == call["billed_usd"] == "0.064900500000000000", rates


def test_a_list_that_is_not_json_quotes_no_price_and_the_others_still_count() -> None:
    lines = events(
        {"token_details": "[not json"},
        {"token_details": details(SONNET_55, "claude-sonnet-5.5")},
    )
    assert log_prices(lines, pl.DataFrame()).height == len(SONNET_55)
