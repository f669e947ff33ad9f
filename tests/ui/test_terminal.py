"""The terminal UI with injected input and a captured console: exact transcripts, every key and field kind."""

from __future__ import annotations

import dataclasses
import io
import unicodedata
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt, UserInterface
from mcp_elicit.core.forms import Field, Form, form_of
from mcp_elicit.reference import DeployTarget, Preferences
from mcp_elicit.ui.terminal import (
    CTRL_C,
    CTRL_D,
    ESC,
    MAX_VALUE_CHARS,
    TerminalUI,
    injected_input,
    plain,
    stream_input,
)

pytestmark = pytest.mark.anyio

REFERENCE = Requester("mcp-elicit-reference", "python -m mcp_elicit serve-reference", version="0.1.0")
DEPLOY = Purpose("tools/call", "deploy", {"service": "checkout"})


def console(**options: Any) -> Console:
    defaults: dict[str, Any] = {
        "file": io.StringIO(),
        "width": 80,
        "color_system": None,
        "force_terminal": False,
        "legacy_windows": False,
        "markup": False,
        "emoji": False,
        "highlight": False,
        "_environ": {},
    }
    return Console(**(defaults | options))


def defaults_of(form: Form) -> dict[str, Any]:
    return {f.name: f.default for f in form.fields if f.has_default}


def prompt_for(form: Form, message: str = "Fill this in.", **options: Any) -> FormPrompt:
    options.setdefault("values", defaults_of(form))
    return FormPrompt(
        options.pop("requester", REFERENCE), options.pop("purpose", DEPLOY), message, form, **options
    )


async def ask(prompt: FormPrompt, lines: list[str], **console_options: Any) -> tuple[UIResult, str]:
    out = console(**console_options)
    result = await TerminalUI(out, injected_input(out, lines)).ask_form(prompt)
    return result, out.file.getvalue()  # type: ignore[attr-defined]


DEPLOY_FORM = form_of(DeployTarget)

DEPLOY_TRANSCRIPT = """\
─────────────── mcp-elicit-reference asks you to fill in a form ────────────────
Server  mcp-elicit-reference 0.1.0
Where   python -m mcp_elicit serve-reference
For     tool deploy {"service": "checkout"}

Where should checkout be deployed?

Keys: Enter keeps the [value] · :help shows all keys
      :decline or Ctrl-D declines · :cancel, Ctrl-C or Esc cancels

Environment · required · choose one by number
   1) staging
   2) production
Environment: 2

Region · optional · choose one by number
 › 1) Europe (Ireland)
   2) US East (Virginia)
   3) Asia Pacific (Mumbai)
Region [1]: 2

Replicas · optional · a whole number from 1 to 20
  Instances to run
Replicas [2]: 30
  at most 20 allowed; try again.
Replicas [2]: 3

Review your answers
  1) Environment  production
  2) Region       US East (Virginia)
  3) Replicas     3
Enter sends · 1-3 changes that answer · :decline · :cancel
Send? [send]: ⏎
Sent.
""".replace("⏎", "")  # ⏎ marks an Enter on an empty line (the prompt's trailing space stays)


async def test_a_form_is_asked_field_by_field_reviewed_and_sent_exact_transcript() -> None:
    """C4: who asks and why come first; F2: titled options, bounds; F6: defaults in [brackets], review."""
    prompt = prompt_for(DEPLOY_FORM, "Where should checkout be deployed?")
    result, transcript = await ask(prompt, ["2", "2", "30", "3", ""])
    assert result == UIResult("accept", {"environment": "production", "region": "us-east", "replicas": 3})
    assert transcript == DEPLOY_TRANSCRIPT


async def test_the_terminal_ui_implements_the_ui_protocol() -> None:
    assert isinstance(TerminalUI(console(), injected_input(console(), [])), UserInterface)


async def test_enter_on_every_field_sends_the_prefilled_defaults_correctly_typed() -> None:
    """F6: defaults are pre-filled and accepted with Enter (what the SEP-1034 conformance check expects)."""
    form = Form(
        (
            Field.string("name", default="Ada"),
            Field.integer("age", default=36),
            Field.number("score", default=95.5),
            Field.boolean("ok", default=True),
            Field.single_select("colour", ["red", "green"], default="green"),
            Field.multi_select("tags", ["a", "b", "c"], default=["a", "c"]),
        )
    )
    result, transcript = await ask(prompt_for(form), [""] * 7)
    assert result == UIResult(
        "accept", {"name": "Ada", "age": 36, "score": 95.5, "ok": True, "colour": "green", "tags": ["a", "c"]}
    )
    assert "name [Ada]: \n" in transcript
    assert "ok (y/n) [yes]: \n" in transcript
    assert "tags [1,3]: \n" in transcript
    assert "  [x] 1) a\n  [ ] 2) b\n  [x] 3) c\n" in transcript


async def test_the_review_screen_changes_any_answer_before_sending() -> None:
    """F6 MUST: the person reviews every field and can change any of them before anything is sent."""
    prompt = prompt_for(DEPLOY_FORM)
    result, transcript = await ask(prompt, ["1", "", "", "1", "2", "3", "7", ""])
    assert result == UIResult("accept", {"environment": "production", "region": "eu-west", "replicas": 7})
    reviews = transcript.split("Review your answers\n")[1:]
    assert len(reviews) == 3
    assert "  1) Environment  staging\n" in reviews[0]
    assert "  1) Environment  production\n" in reviews[1]
    assert "  3) Replicas     7\n" in reviews[2]


@pytest.mark.parametrize("key", [":decline", CTRL_D])
@pytest.mark.parametrize("step", ["first field", "review"])
async def test_decline_is_one_key_away_at_every_step(key: str, step: str) -> None:
    """C3/C4: an explicit no, typed or as Ctrl-D, on a field or on the review screen."""
    lines = [key] if step == "first field" else ["1", "", "", key]
    result, transcript = await ask(prompt_for(DEPLOY_FORM), lines)
    assert result == UIResult("decline")
    assert transcript.endswith("Declined: the server is told no.\n")


@pytest.mark.parametrize("key", [":cancel", CTRL_C, ESC])
@pytest.mark.parametrize("step", ["first field", "review"])
async def test_cancel_is_one_key_away_at_every_step_and_ctrl_c_never_crashes(key: str, step: str) -> None:
    """C3/C4: dismiss without a choice, typed, Ctrl-C or Esc; a KeyboardInterrupt becomes cancel."""
    lines = [key] if step == "first field" else ["1", "", "", key]
    result, transcript = await ask(prompt_for(DEPLOY_FORM), lines)
    assert result == UIResult("cancel")
    assert transcript.endswith("Cancelled: the server is told you dismissed the question.\n")


async def test_running_out_of_input_ends_like_ctrl_d() -> None:
    result, _ = await ask(prompt_for(DEPLOY_FORM), ["2"])
    assert result.action == "decline"


async def test_a_required_field_cannot_be_left_empty() -> None:
    form = Form((Field.string("username", title="Username"),))
    result, transcript = await ask(prompt_for(form), ["", ":clear", "ada", ""])
    assert result == UIResult("accept", {"username": "ada"})
    assert "Username: \n  An answer is needed here (or :decline, :cancel).\n" in transcript
    assert "Username: :clear\n  This field is required; it cannot be left empty.\n" in transcript


async def test_clear_leaves_an_optional_field_out_of_the_answer() -> None:
    form = Form((Field.string("nick", required=False, default="ada"), Field.string("note", required=False)))
    result, transcript = await ask(prompt_for(form), [":clear", "", ""])
    assert result == UIResult("accept", {})
    # The form's default applies to a field left out: the person is told what will be sent.
    assert "Cleared: the server's default, ada, applies to an empty answer." in transcript
    assert "  1) nick  (empty: the default ada applies)\n  2) note  (empty)\n" in transcript


async def test_a_single_select_takes_an_options_title_and_a_multi_select_number_toggles() -> None:
    form = Form(
        (
            Field.single_select("size", [("s", "Small"), ("l", "Large")], title="Size"),
            Field.multi_select(
                "tags", [("a", "Alpha"), ("b", "Beta"), ("c", "Gamma")], default=["a", "b"], min_items=1
            ),
        )
    )
    result, transcript = await ask(prompt_for(form), ["large", "1", ""])
    assert result == UIResult("accept", {"size": "l", "tags": ["b"]})  # 1 toggled off, 2 kept
    assert ":none" not in transcript.split("tags", 1)[1].split("\n", 1)[0]  # at least one is required


async def test_numbers_are_parsed_and_bounds_enforced_with_the_reason_shown() -> None:
    """F2/F3: bounds shown up front; fractional numbers are valid for `number`; integers refuse fractions."""
    form = Form(
        (
            Field.number("ratio", title="Ratio", minimum=0, maximum=1.5),
            Field.integer("count", title="Count", minimum=1),
            Field.integer("limit", title="Limit", maximum=10),
            Field.number("any", title="Any"),
        )
    )
    lines = ["abc", "nan", "2", "0.25", "2.5", "0", "4", "11", "10", "-1e3", ""]
    result, transcript = await ask(prompt_for(form), lines)
    assert result == UIResult("accept", {"ratio": 0.25, "count": 4, "limit": 10, "any": -1000.0})
    assert "Ratio · required · a number from 0 to 1.5\n" in transcript
    assert "Count · required · a whole number, at least 1\n" in transcript
    assert "Limit · required · a whole number, at most 10\n" in transcript
    assert "Any · required · a number\n" in transcript
    assert "Ratio: abc\n  not a number; try again.\n" in transcript
    assert "Ratio: nan\n  not a finite number; try again.\n" in transcript
    assert "Ratio: 2\n  at most 1.5 allowed; try again.\n" in transcript
    assert "Count: 2.5\n  a whole number is needed; try again.\n" in transcript
    assert "Count: 0\n  at least 1 needed; try again.\n" in transcript


@pytest.mark.parametrize(
    ("fmt", "hint", "bad", "good"),
    [
        ("email", "an email address, like name@example.org", "ada@", "ada@example.org"),
        ("uri", "an absolute URI, like https://example.org/page", "not a uri", "https://example.org/x"),
        ("date", "a date, YYYY-MM-DD", "2025-02-30", "2025-02-28"),
        ("date-time", "a date and time, YYYY-MM-DDTHH:MM:SSZ", "2025-02-28 10:00", "2025-02-28T10:00:00Z"),
    ],
)
async def test_string_formats_are_hinted_and_checked(fmt: Any, hint: str, bad: str, good: str) -> None:
    """F2: each format has a hint before the question and is checked before the answer is taken."""
    form = Form((Field.string("when", title="Value", format=fmt),))
    result, transcript = await ask(prompt_for(form), [bad, good, ""])
    assert result == UIResult("accept", {"when": good})
    assert f"Value · required · {hint}" in transcript
    assert f"Value: {bad}\n  not a valid {fmt}; try again.\n" in transcript


async def test_string_lengths_are_hinted_and_checked() -> None:
    form = Form((Field.string("u", title="User", min_length=3, max_length=5),))
    result, transcript = await ask(prompt_for(form), ["ab", "abcdef", "abc", ""])
    assert result == UIResult("accept", {"u": "abc"})
    assert "User · required · text, 3 to 5 characters\n" in transcript
    assert "User: ab\n  2 characters, at least 3 needed; try again.\n" in transcript


async def test_booleans_take_yes_or_no() -> None:
    form = Form((Field.boolean("ok", title="Proceed"),))
    result, transcript = await ask(prompt_for(form), ["maybe", "N", ""])
    assert result == UIResult("accept", {"ok": False})
    assert "Proceed (y/n): maybe\n  answer y or n; try again.\n" in transcript
    assert "  1) Proceed  no\n" in transcript


async def test_titled_options_show_titles_and_send_values() -> None:
    """F2: titled single and multi selects: the person reads titles, the server gets the values."""
    form = Form(
        (
            Field.single_select("size", [("s", "Small"), ("m", "Medium")], title="Size"),
            Field.multi_select("extras", [("cheese", "Extra cheese"), ("olives", "Olives")], title="Extras"),
        )
    )
    result, transcript = await ask(prompt_for(form), ["m", "2, 1", ""])
    assert result == UIResult("accept", {"size": "m", "extras": ["olives", "cheese"]})
    assert "   1) Small\n   2) Medium\n" in transcript
    assert "  [ ] 1) Extra cheese\n  [ ] 2) Olives\n" in transcript
    assert "  1) Size    Medium\n  2) Extras  Olives, Extra cheese\n" in transcript
    assert "cheese" not in transcript.replace("Extra cheese", "")


async def test_a_multi_select_takes_numbers_values_or_none_within_its_bounds() -> None:
    options = ["releases", "security", "events"]
    form = Form((Field.multi_select("topics", options, title="Topics", min_items=1, max_items=2),))
    lines = [":none", "1 2 3", "4", "bogus", "3,events", ""]
    result, transcript = await ask(prompt_for(form), lines)
    assert result == UIResult("accept", {"topics": ["events"]})
    # At least one is required: :none is not offered, and typed anyway it is not a command here.
    assert "Topics · required · a number toggles it, a list such as 1,3 sets them (1 to 2)\n" in transcript
    assert "Topics: :none\n  :none: not here (:help lists the keys).\n" in transcript
    assert "Topics: 1 2 3\n  3 items, at most 2 allowed; try again.\n" in transcript
    assert "Topics: 4\n  4 is not a number from 1 to 3; try again.\n" in transcript
    assert "Topics: bogus\n  bogus is not one of the options; try again.\n" in transcript


async def test_none_is_a_command_only_in_a_multi_select() -> None:
    form = Form((Field.string("x", title="X"),))
    result, transcript = await ask(prompt_for(form), [":none", ":send", ":help", "::none", ""])
    assert result == UIResult("accept", {"x": ":none"})
    assert "X: :none\n  :none: not here (:help lists the keys).\n" in transcript
    assert "X: :send\n  :send: not here" in transcript
    assert "X: :help\nKeys: Enter keeps the [value]" in transcript
    assert ":clear empties an optional field" in transcript


async def test_an_unknown_command_is_refused_and_a_doubled_colon_types_one() -> None:
    form = Form((Field.string("x", title="X"),))
    result, transcript = await ask(prompt_for(form), [":oops", "::oops", ""])
    assert result == UIResult("accept", {"x": ":oops"})
    assert "X: :oops\n  :oops: unknown command (:help lists the keys).\n" in transcript


async def test_a_retry_asks_only_the_refused_fields_and_shows_why() -> None:
    """F7 loop: the pipeline refused an answer; the person sees the reason on that field and the review."""
    form = form_of(Preferences)
    values = {"newsletter": True, "topics": ["releases"], "birthday": "1815-12-10"}
    prompt = prompt_for(form, values=values, errors={"birthday": "not a valid date", "": "content was wrong"})
    result, transcript = await ask(prompt, ["1816-12-10", ""])
    assert result.content == {"newsletter": True, "topics": ["releases"], "birthday": "1816-12-10"}
    assert "Your last answer was refused: content was wrong\n" in transcript
    assert "Birthday · optional · a date, YYYY-MM-DD\n  Refused last time: not a valid date\n" in transcript
    assert "Send me the newsletter (y/n)" not in transcript  # not asked again, only reviewed
    assert "  1) Send me the newsletter  yes\n" in transcript


async def test_an_empty_form_is_reviewed_and_sent_as_an_empty_answer() -> None:
    result, transcript = await ask(prompt_for(Form(())), ["x", ""])
    assert result == UIResult("accept", {})
    assert "  (this form has no fields)\nEnter sends · :decline · :cancel\n" in transcript
    assert "Send? [send]: x\n  Press Enter to send.\n" in transcript


async def test_identity_title_version_where_and_purpose_are_shown() -> None:
    """C4: the client makes clear which server asks, where it runs, and what the answer serves."""
    requester = Requester("acme-db", "https://db.example.org/mcp", title="ACME Database", version="2.1")
    prompt = prompt_for(
        Form(()),
        requester=requester,
        purpose=Purpose("resources/read", "notes://x", None),
        warnings=("this form may ask for a secret",),
    )
    _, transcript = await ask(prompt, [""])
    lines = transcript.splitlines()
    assert "acme-db asks you to fill in a form" in lines[0]
    assert lines[1:4] == [
        "Server  ACME Database (acme-db 2.1)",
        "Where   https://db.example.org/mcp",
        "For     resource notes://x",
    ]
    assert "Warning: this form may ask for a secret" in lines


async def test_where_a_server_runs_is_shown_without_its_credentials() -> None:
    """As the consent trail records it (core/redact.py): a password in a DSN, a token option."""
    where = "mcp-elicit serve-data --dsn postgresql://reader:s3cret@db/sales --api-key sk-live-1"
    _, transcript = await ask(prompt_for(Form(()), requester=Requester("data", where)), [""])
    assert "s3cret" not in transcript
    assert "sk-live-1" not in transcript
    assert "Where   mcp-elicit serve-data" in transcript


async def test_a_server_that_gave_no_name_is_shown_as_unnamed_with_where_it_runs() -> None:
    _, transcript = await ask(prompt_for(Form(()), requester=Requester("", "https://x.example/mcp")), [""])
    assert "(unnamed server) asks you to fill in a form" in transcript
    assert "Server  (unnamed server)\nWhere   https://x.example/mcp\n" in transcript


async def test_a_question_outside_any_request_says_so() -> None:
    _, transcript = await ask(prompt_for(Form(()), purpose=Purpose()), [""])
    assert "For     not known: the server asked outside any request of yours\n" in transcript


async def test_long_arguments_and_values_are_cut_for_display_but_sent_whole() -> None:
    long = "x" * (MAX_VALUE_CHARS * 2)
    form = Form((Field.string("text", title="T", default=long),))
    purpose = Purpose("tools/call", "t", {"blob": "y" * 1000})
    result, transcript = await ask(prompt_for(form, purpose=purpose), ["", ""], width=1000)
    assert result == UIResult("accept", {"text": long})
    assert long not in transcript
    assert "x" * (MAX_VALUE_CHARS - 1) + "…" in transcript
    assert "y" * 1000 not in transcript


HOSTILE = (
    "Hi \x1b[2J\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 \u202egnp.exe [bold red]x[/] :smile:\x9b"
)


async def test_server_text_is_plain_text_never_markup_links_or_escape_sequences() -> None:
    """F8 and defence in depth: even text the pipeline failed to clean cannot drive the terminal."""
    form = Form((Field.single_select("pick", [("a", "[link=https://evil.example]A[/link] \x1b[31m")]),))
    hostile = Requester("evil\x1b[8m", "cmd \x1b]0;title\x07", title="[blink]T[/]", version="1\u200b")
    prompt = prompt_for(form, HOSTILE, requester=hostile, values={})
    result, raw = await ask(prompt, ["1", ""], force_terminal=True, color_system="truecolor")
    assert result.action == "accept"
    raw_sequences = ("\x1b[2J", "\x1b]8", "\x1b]0", "\x07", "\x9b", "\u202e", "\u200b", "\x1b[8m", "\x1b[31m")
    for sequence in raw_sequences:
        assert sequence not in raw
    assert "\\u001b[2J\\u001b]8;;https://evil.example/\\u0007click" in raw
    assert "\\u202egnp.exe [bold red]x[/] :smile:\\u009b" in raw
    assert "[link=https://evil.example]A[/link] \\u001b[31m" in raw
    assert "[blink]T[/]" in raw


async def test_defaults_and_answers_from_the_person_are_echoed_plainly() -> None:
    form = Form((Field.string("x", title="X", default="a\x1bb"),))
    _, transcript = await ask(prompt_for(form), ["", ""])
    assert "X [a\\u001bb]: \n" in transcript


async def test_a_question_withdrawn_by_the_pipeline_says_so() -> None:
    """The pipeline's idle timeout cancels the UI; the person is told, the cancellation goes on."""
    out = console()
    asked = anyio.Event()

    async def never_answers(prompt: str) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with anyio.create_task_group() as tg:
        tg.start_soon(TerminalUI(out, never_answers).ask_form, prompt_for(DEPLOY_FORM))
        with anyio.fail_after(5):
            await asked.wait()
        tg.cancel_scope.cancel()
    transcript = out.file.getvalue()  # type: ignore[attr-defined]
    assert transcript.endswith("The question was withdrawn (no answer in time, or the call ended).\n")


async def test_two_questions_at_once_are_asked_one_after_the_other() -> None:
    """Several embedded requests of one InputRequiredResult arrive together; forms never interleave."""
    out = console()
    ui = TerminalUI(out, injected_input(out, ["first", "", "second", ""]))
    form = Form((Field.string("x", title="X"),))
    results: list[UIResult] = []

    async def one(message: str) -> None:
        results.append(await ui.ask_form(prompt_for(form, message)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "Question A")
        tg.start_soon(one, "Question B")
    transcript = out.file.getvalue()  # type: ignore[attr-defined]
    assert [r.content for r in results] == [{"x": "first"}, {"x": "second"}]
    first_done = transcript.index("Sent.")
    assert transcript.index("Question A") < first_done < transcript.index("Question B")


# -- URL mode ---------------------------------------------------------------------------------


def url_prompt(**options: Any) -> UrlPrompt:
    display = {"scheme": "https://", "subdomain": "login.", "registrable_domain": "example.com"}
    display["rest"] = "/x?y"
    return UrlPrompt(
        REFERENCE,
        DEPLOY,
        options.pop("message", "Sign in to continue."),
        "https://login.example.com/x?y",
        options.pop("display", display),
        **options,
    )


async def ask_url(prompt: UrlPrompt, lines: list[str]) -> tuple[UIResult, str]:
    out = console()
    result = await TerminalUI(out, injected_input(out, lines)).ask_url(prompt)
    return result, out.file.getvalue()  # type: ignore[attr-defined]


async def test_a_url_is_shown_in_full_with_its_site_and_accepted_only_on_open() -> None:
    """U2/U3: the full URL and its site before consent; accept means consent to open, nothing else."""
    result, transcript = await ask_url(url_prompt(warnings=("punycode host",)), ["", "sure", "open"])
    assert result == UIResult("accept")
    assert "asks you to open a web page" in transcript
    assert "Page    https://login.example.com/x?y\n" in transcript
    assert "Site    example.com\n" in transcript
    assert "Warning: punycode host\n" in transcript
    assert "Nothing opens unless you type open" in transcript
    assert transcript.count("Type open, :decline or :cancel.") == 2
    assert transcript.endswith("Accepted: the page may be opened now.\n")


@pytest.mark.parametrize(("line", "action"), [("no", "decline"), (CTRL_D, "decline"), (CTRL_C, "cancel")])
async def test_a_url_can_be_declined_or_cancelled(line: str, action: str) -> None:
    result, _ = await ask_url(url_prompt(), [line])
    assert result.action == action


async def test_a_blocked_url_offers_no_open_option_U3() -> None:
    """The verdict is the one signal: a block verdict is never openable, whatever is typed."""
    prompt = url_prompt(verdict="block", warnings=("The site name looks like paypal.com (lookalike)",))
    result, transcript = await ask_url(prompt, ["open"])
    assert result == UIResult("decline")
    assert "This page is blocked: it cannot be opened from here." in transcript
    assert "type open" not in transcript


async def test_a_warning_that_merely_says_block_does_not_block() -> None:
    """Server text cannot switch the consent screen: only `UrlPrompt.verdict` blocks."""
    result, transcript = await ask_url(url_prompt(warnings=("block: says the server",)), ["open"])
    assert result == UIResult("accept")
    assert "This page is blocked" not in transcript


async def test_a_url_without_display_parts_is_shown_raw_and_escaped() -> None:
    result, transcript = await ask_url(url_prompt(display={}), [":cancel"])
    assert result == UIResult("cancel")
    assert "Page    https://login.example.com/x?y\n" in transcript
    assert "Site" not in transcript


async def test_a_notice_names_the_server_and_where_it_runs() -> None:
    out = console(width=200)
    await TerminalUI(out, injected_input(out, [])).notice(REFERENCE, "refused a form: nested\x1b objects")
    assert out.file.getvalue() == (  # type: ignore[attr-defined]
        "Note about mcp-elicit-reference (python -m mcp_elicit serve-reference): refused a form: "
        "nested\\u001b objects\n"
    )


# -- readers and plain() ----------------------------------------------------------------------


async def test_the_stream_reader_reads_lines_and_ends_with_eof() -> None:
    out = console()
    read = stream_input(out, io.StringIO("one\r\ntwo\n"))
    assert [await read("a: "), await read("b: ")] == ["one", "two"]
    with pytest.raises(EOFError):
        await read("c: ")
    assert out.file.getvalue() == "a: b: c: \n"  # type: ignore[attr-defined]


_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}


@settings(max_examples=200)
@given(st.text())
def test_plain_leaves_no_control_format_or_separator_character_but_newlines(text: str) -> None:
    shown = plain(text)
    assert all(ch == "\n" or unicodedata.category(ch) not in _UNSAFE for ch in shown)
    assert shown.count("\n") == text.count("\n")


@settings(max_examples=200)
@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Zl", "Zp"))))
def test_plain_keeps_printable_text_as_it_is(text: str) -> None:
    assert plain(text) == text


async def test_the_policys_approval_asks_allow_and_never_says_sent() -> None:
    message = "This server wants to ask you a question. Accept (send this empty form) to see it, or decline."
    approval = dataclasses.replace(prompt_for(Form(())), message=message, approval=True)
    result, transcript = await ask(approval, [""])
    assert result == UIResult("accept", {})
    assert "Allow? [allow]:" in transcript
    assert "empty form" not in transcript
    assert "Review your answers" not in transcript
    assert "Sent." not in transcript
    refused, transcript = await ask(approval, ["n"])
    assert refused.action == "decline"
