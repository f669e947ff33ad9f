"""F5: servers must not ask for secrets through form mode; core/sensitive.py spots forms that do.

The tables below are realistic fields, each with why it is (or is not) secret-seeking. The rate
tests compute the false-alarm rate (benign fields judged ``block``) and the miss rate (secret
fields not judged ``block``) over the whole table and hold them under fixed ceilings; the known
misses and false alarms are listed by name so a change in either direction shows up.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core.sensitive import (
    BENIGN_PHRASES,
    RULES,
    FieldVerdict,
    classify_field,
    classify_schema,
    tokenize,
)

Case = tuple[str, dict[str, Any], str]


def f(
    name: str, title: str | None = None, description: str | None = None, **extra: Any
) -> tuple[str, dict[str, Any]]:
    schema: dict[str, Any] = {"type": "string", **extra}
    if title is not None:
        schema["title"] = title
    if description is not None:
        schema["description"] = description
    return name, schema


def case(field: tuple[str, dict[str, Any]], why: str) -> Case:
    return (field[0], field[1], why)


SECRET_FIELDS: list[Case] = [
    case(f("password"), "the plainest password field"),
    case(f("Password", title="Password"), "capitalised name and title"),
    case(f("userPassword"), "camelCase compound"),
    case(f("db_passwd"), "Unix-style abbreviation in snake_case"),
    case(f("pwd"), "common abbreviation"),
    case(f("new-password"), "kebab-case"),
    case(f("confirm_password", title="Confirm password"), "a password typed twice is still a password"),
    case(f("DATABASE_PASSWORD"), "environment-variable style"),
    case(f("dbPassword"), "glued prefix with camelCase"),
    case(f("adminpassword"), "glued prefix without any separator"),
    case(f("passphrase", description="The passphrase protecting your SSH key"), "passphrase"),
    case(f("value", title="Passphrase for your GPG key"), "the title alone says passphrase"),
    case(f("passcode"), "device passcode"),
    case(f("pin", title="PIN"), "a PIN as a string"),
    case(("pin", {"type": "integer", "minimum": 0, "maximum": 9999}), "a numeric PIN"),
    case(f("card_pin"), "card PIN, head noun pin"),
    case(f("atmPin"), "camelCase PIN"),
    case(f("pin_code"), "pin code"),
    case(f("api_key"), "API key, F5 names it"),
    case(f("apiKey"), "camelCase API key"),
    case(f("OPENAI_API_KEY"), "environment-variable style API key"),
    case(f("x-api-key"), "the header name"),
    case(f("apikey"), "glued API key"),
    case(f("key", title="API key", description="Your Stripe API key"), "title and description say API key"),
    case(f("stripe_secret_key"), "a secret key"),
    case(f("aws_secret_access_key"), "AWS secret access key"),
    case(f("access_token"), "OAuth access token, F5 names it"),
    case(f("refreshToken"), "refresh token"),
    case(f("github_token"), "a GitHub token"),
    case(f("token", title="Personal access token"), "the title says access token"),
    case(f("bearer_token"), "bearer token"),
    case(f("auth_token"), "auth token"),
    case(f("slack_bot_token"), "Slack bot token"),
    case(f("id_token"), "OpenID Connect ID token"),
    case(f("jwt"), "a JSON Web Token"),
    case(f("session_cookie"), "a session cookie logs you in"),
    case(f("authorization", description="The value of the Authorization header"), "a header credential"),
    case(f("npm_token"), "npm publish token"),
    case(f("client_secret"), "OAuth client secret"),
    case(f("clientSecret"), "camelCase client secret"),
    case(f("oauth_client_secret"), "longer client secret"),
    case(f("webhook_secret"), "webhook signing secret"),
    case(f("secret"), "a field named secret"),
    case(f("shared_secret"), "shared secret"),
    case(f("secret", title="Webhook signing secret"), "signing secret"),
    case(f("private_key", description="PEM-encoded private key"), "private key"),
    case(f("privateKey"), "camelCase private key"),
    case(f("ssh_private_key"), "SSH private key"),
    case(f("signing_key"), "a signing key"),
    case(f("encryption_key"), "an encryption key"),
    case(f("otp"), "one-time password"),
    case(f("totp_code"), "TOTP code"),
    case(f("one_time_code"), "one-time code"),
    case(
        f("code", title="Verification code", description="Enter the 6-digit code we sent to your phone"),
        "OTP",
    ),
    case(f("mfa_code"), "MFA code"),
    case(f("twoFactorCode"), "two-factor code"),
    case(f("2fa_code"), "2FA code, digits split from letters"),
    case(f("code", description="Enter the code from your authenticator app"), "authenticator code in prose"),
    case(f("backup_code"), "account recovery backup code"),
    case(f("seed_phrase"), "wallet seed phrase"),
    case(f("mnemonic"), "wallet mnemonic"),
    case(f("authorization_code", description="Paste the code from the consent page"), "OAuth auth code"),
    case(f("card_number"), "card number, F5 payment credentials"),
    case(f("cardNumber"), "camelCase card number"),
    case(f("cc_number"), "cc number"),
    case(f("credit_card"), "the credit card itself"),
    case(f("creditCardNumber"), "camelCase credit card number"),
    case(f("number", title="Card number"), "the title says card number"),
    case(f("cvv"), "card verification value"),
    case(f("cvc"), "card verification code"),
    case(f("cvv2"), "cvv with a digit"),
    case(f("security_code", title="Security code", description="3 digits on the back of your card"), "CSC"),
    case(f("card_verification_value"), "spelled out"),
    case(f("csc_value", **{"x-autocomplete": "cc-csc"}), "HTML autocomplete token cc-csc"),
    case(f("iban"), "bank account for direct debits"),
    case(f("ssn"), "US social security number"),
    case(f("social_security_number"), "spelled out"),
    case(f("national_id_number"), "national id number"),
    case(f("aadhaar_number"), "Indian national id"),
    case(f("value", format="password"), "the schema marks a password input"),
    case(f("field1", title="Enter your password"), "generic name, title says password"),
    case(
        f("answer", description="Please type your account password to confirm"), "prose asks for a password"
    ),
    case(f("token_value", **{"x-sensitive": True}), "the server declares it sensitive"),
    case(f("contraseña"), "Spanish for password, accent folded"),
    case(f("mot_de_passe"), "French for password"),
    case(f("admin_pass"), "'pass' alone is ambiguous (boarding pass), a known miss"),
    case(f("creds"), "slang for credentials, a known miss"),
]

# Secret fields the rules knowingly let through (documented misses: ambiguous words).
KNOWN_MISSES = {"admin_pass", "creds"}

BENIGN_FIELDS: list[Case] = [
    case(f("email", format="email"), "contact address; F5 says email is not banned"),
    case(f("username"), "F5 says username is not banned"),
    case(f("full_name"), "a name"),
    case(f("first_name"), "a name"),
    case(f("last_name"), "a name"),
    case(f("display_name"), "a name"),
    case(f("phone_number"), "contact number"),
    case(f("address_line1"), "postal address"),
    case(f("city"), "postal address"),
    case(f("postal_code"), "postal address"),
    case(f("zip_code"), "postal address"),
    case(f("country_code"), "ISO country"),
    case(f("area_code"), "phone area code"),
    case(f("date_of_birth", format="date"), "personal data, not a credential (decided: ok)"),
    case(("age", {"type": "integer"}), "a number"),
    case(f("company"), "organisation"),
    case(f("job_title"), "organisation"),
    case(f("website", format="uri"), "a link"),
    case(f("github_username"), "a handle, not a secret"),
    case(f("repository"), "dev tooling"),
    case(f("branch_name"), "dev tooling"),
    case(f("commit_message"), "dev tooling"),
    case(f("pr_title"), "dev tooling"),
    case(f("description"), "free text"),
    case(f("notes"), "free text"),
    case(f("comment"), "free text"),
    case(f("feedback"), "free text"),
    case(("rating", {"type": "integer", "minimum": 1, "maximum": 5}), "a score"),
    case(("priority", {"type": "string", "enum": ["low", "high"]}), "a choice"),
    case(("environment", {"type": "string", "enum": ["staging", "production"]}), "deploy target"),
    case(f("region"), "cloud region"),
    case(f("instance_type"), "cloud size"),
    case(("replica_count", {"type": "integer"}), "a count"),
    case(("max_tokens", {"type": "integer"}), "LLM setting: tokens are text units here"),
    case(("token_count", {"type": "integer"}), "LLM usage"),
    case(("token_limit", {"type": "integer"}), "LLM setting"),
    case(("temperature", {"type": "number"}), "LLM setting"),
    case(f("model"), "LLM setting"),
    case(f("language"), "preference"),
    case(f("timezone"), "preference"),
    case(f("start_date", format="date"), "scheduling"),
    case(f("meeting_time", format="date-time"), "scheduling"),
    case(("duration_minutes", {"type": "integer"}), "scheduling"),
    case(f("subject"), "message"),
    case(f("title"), "message"),
    case(f("body"), "message"),
    case(("tags", {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}), "multi-select"),
    case(f("category"), "classification"),
    case(("quantity", {"type": "integer"}), "shopping"),
    case(("price", {"type": "number"}), "shopping"),
    case(f("currency"), "shopping"),
    case(f("discount_code"), "a promo code is meant to be shared"),
    case(f("promo_code"), "shared marketing code"),
    case(f("coupon"), "shared marketing code"),
    case(f("order_id"), "a reference"),
    case(f("invoice_number"), "a reference"),
    case(f("tracking_number"), "a reference"),
    case(f("reference_number"), "a reference"),
    case(("agree_to_terms", {"type": "boolean"}), "consent checkbox"),
    case(("subscribe_newsletter", {"type": "boolean"}), "preference"),
    case(("remember_password", {"type": "boolean"}), "a yes/no about passwords carries no password"),
    case(("confirm_delete", {"type": "boolean"}), "confirmation"),
    case(f("reason"), "free text"),
    case(f("secretary_email", title="Secretary's email"), "secretary is not secret"),
    case(("number_of_passwords_rotated", {"type": "integer"}), "a count about passwords"),
    case(f("keyboard_layout"), "keyboard is not key"),
    case(("pinned", {"type": "boolean"}), "pinned is not pin"),
    case(("pin", {"type": "boolean", "title": "Pin this note"}), "pin as a verb on a checkbox"),
    case(f("pin_to_top"), "pin as a verb"),
    case(f("passport_expiry_date", format="date"), "travel document date"),
    case(f("primary_key_column"), "database schema"),
    case(f("sort_key"), "database schema"),
    case(f("primary_key"), "database schema"),
    case(
        f("ssh_public_key", description="Paste your SSH public key (id_ed25519.pub)"),
        "public keys are public",
    ),
    case(f("key_results"), "OKR wording"),
    case(f("api_version"), "an API version is not a secret"),
    case(f("api_endpoint", format="uri"), "a URL"),
    case(f("callback_url", format="uri"), "a URL"),
    case(("password_length", {"type": "integer", "minimum": 8}), "password policy setting"),
    case(("password_manager", {"type": "string", "enum": ["1password", "bitwarden"]}), "which tool"),
    case(("min_password_length", {"type": "integer"}), "password policy setting"),
    case(("secret_santa_budget", {"type": "number"}), "a party game"),
    case(f("token_name", description="A name for the new token, e.g. ci-deploy"), "labels a token to create"),
    case(f("api_key_name"), "labels a key"),
    case(f("key_name"), "labels a key"),
    case(f("access_key_id"), "AWS key ids identify, they do not authenticate"),
    case(f("account_name"), "an account label"),
    case(f("account_id"), "an account reference"),
    case(f("file_path"), "a path"),
    case(("pin_message", {"type": "boolean"}), "pin a chat message"),
    case(f("cardholder_name"), "name on the card, not a credential"),
    case(
        f("card_number_last4", title="Card number (last 4 digits)"),
        "the last four digits are printed on receipts",
    ),
    case(("card_brand", {"type": "string", "enum": ["visa", "mastercard"]}), "card type"),
    case(("payment_method", {"type": "string", "enum": ["card", "paypal"]}), "choice"),
    case(f("shipping_address"), "postal address"),
    case(f("delivery_instructions"), "free text"),
    case(f("phone", description="We'll text you a one-time code to confirm"), "we send the code, not ask it"),
    case(f("mobile", description="We will send a verification code to this number"), "we send the code"),
    case(f("email_address", description="We will send a password reset link to this address"), "reset link"),
    case(f("username2", description="Your login name (never your password)"), "negated"),
    case(f("notes2", description="Do not paste your password or API key here"), "negated warning"),
    case(f("license_plate"), "vehicle"),
    case(("security_level", {"type": "string", "enum": ["low", "high"]}), "a setting"),
    case(("auth_method", {"type": "string", "enum": ["sso", "password"]}), "choice of method"),
    case(("two_factor_enabled", {"type": "boolean"}), "a yes/no"),
    case(f("keywords"), "search"),
    case(f("key_points"), "summary"),
    case(f("keynote_speaker"), "conference"),
    case(f("monkey_name"), "monkey contains key but is not key"),
    case(f("hockey_team"), "hockey contains key but is not key"),
    case(("tokenizer", {"type": "string", "enum": ["bpe", "wordpiece"]}), "NLP setting"),
    case(f("code_snippet"), "code alone is not a credential"),
    case(
        f("recipe_name", description="Name of the dish, e.g. Grandma's secret sauce"),
        "prose secret: warn only",
    ),
    case(("is_private", {"type": "boolean"}), "visibility flag"),
    case(f("private_notes"), "private is not secret"),
    case(f("token_symbol", description="Ticker symbol of the token, e.g. ETH"), "crypto ticker"),
    case(f("wallet_address"), "public address"),
    case(f("keyboard_shortcut"), "UI"),
    case(("passkey_enabled", {"type": "boolean"}), "yes/no"),
    case(f("session_name"), "a label"),
    case(("cookie_consent", {"type": "boolean"}), "banner choice"),
    case(f("credential_type"), "a kind of credential, not one"),
    case(f("password_policy_url", format="uri"), "a link to the rules, not a password"),
    case(f("author"), "auth is not author"),
    case(f("spin_count"), "spin contains pin"),
    case(f("pinterest_url", format="uri"), "pinterest starts with pin"),
    case(f("otter_name"), "otter starts with ot"),
]

# Benign fields the rules knowingly block (documented false alarms).
KNOWN_FALSE_ALARMS: set[str] = set()

# Ceilings for the rates over the tables; see the module docstring.
MAX_FALSE_ALARM_RATE = 0.02
MAX_MISS_RATE = 0.05

WARN_FIELDS: list[Case] = [
    case(f("key"), "a bare key may be an API key"),
    case(f("token"), "a bare token may be a credential"),
    case(f("credentials"), "credentials wording"),
    case(f("account_number"), "bank account number"),
    case(f("routing_number"), "bank routing number"),
    case(f("security_answer"), "answers reset passwords"),
    case(f("mothers_maiden_name", title="Mother's maiden name"), "classic security question"),
    case(f("pan"), "PAN is card jargon"),
    case(f("license_key"), "a software licence key"),
    case(f("database_url"), "connection strings embed passwords"),
    case(f("value", writeOnly=True), "pydantic SecretStr emits writeOnly"),
    case(f("passport_number"), "identity document number"),
    case(f("auth"), "a bare auth field"),
    case(
        ("password_choice", {"type": "string", "enum": ["hunter2", "letmein"]}), "a select is capped at warn"
    ),
]


def test_the_tables_are_as_large_as_the_issue_requires() -> None:
    assert len(SECRET_FIELDS) >= 60
    assert len(BENIGN_FIELDS) >= 100
    assert len({name for name, _, _ in BENIGN_FIELDS}) == len(BENIGN_FIELDS)


@pytest.mark.parametrize(
    ("name", "schema", "why"), SECRET_FIELDS, ids=[c[0] + ":" + c[2] for c in SECRET_FIELDS]
)
def test_f5_a_secret_seeking_field_is_blocked(name: str, schema: dict[str, Any], why: str) -> None:
    verdict = classify_field(name, schema)
    if name in KNOWN_MISSES:
        assert verdict.verdict != "block", f"{name} is no longer a miss: drop it from KNOWN_MISSES"
    else:
        assert verdict.verdict == "block", why
        assert verdict.reasons


@pytest.mark.parametrize(("name", "schema", "why"), BENIGN_FIELDS, ids=[c[0] for c in BENIGN_FIELDS])
def test_a_benign_field_is_not_blocked(name: str, schema: dict[str, Any], why: str) -> None:
    verdict = classify_field(name, schema)
    if name in KNOWN_FALSE_ALARMS:
        assert verdict.verdict == "block"
    else:
        assert verdict.verdict != "block", f"{why}: {verdict.reasons}"


@pytest.mark.parametrize(("name", "schema", "why"), WARN_FIELDS, ids=[c[0] for c in WARN_FIELDS])
def test_a_weak_signal_warns_without_blocking(name: str, schema: dict[str, Any], why: str) -> None:
    assert classify_field(name, schema).verdict == "warn", why


def rates() -> tuple[float, float]:
    false_alarms = sum(classify_field(n, s).verdict == "block" for n, s, _ in BENIGN_FIELDS)
    misses = sum(classify_field(n, s).verdict != "block" for n, s, _ in SECRET_FIELDS)
    return false_alarms / len(BENIGN_FIELDS), misses / len(SECRET_FIELDS)


def test_false_alarm_and_miss_rates_stay_under_their_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    false_alarm_rate, miss_rate = rates()
    with capsys.disabled():
        print(
            f"\nsensitive: false-alarm rate {false_alarm_rate:.1%} over {len(BENIGN_FIELDS)} benign fields, "
            f"miss rate {miss_rate:.1%} over {len(SECRET_FIELDS)} secret-seeking fields"
        )
    assert false_alarm_rate <= MAX_FALSE_ALARM_RATE
    assert miss_rate <= MAX_MISS_RATE


# A second table written after the rules were tuned against the ones above and never tuned
# against: its rates are the honest estimate. Known result: the three `<vendor>_token` names only
# warn (a bare "token" head is a weak signal), so the held-out miss rate is 3/30.
HELD_OUT_SECRET = [
    "vault_token",
    "gitlabToken",
    "HF_TOKEN",
    ("consumer_key", "Consumer secret"),
    ("app_password", "App password"),
    "wifi_password",
    ("wpa_key", "Wi-Fi passphrase"),
    ("unlock_code", "Phone PIN"),
    ("cc", "Credit card number"),
    ("exp_cvc", "CVC"),
    "bank_iban",
    ("sin_number", "Social Insurance Number"),
    ("nin", "National Insurance number"),
    "sms_code",
    ("login_code", "Login code"),
    "verificationCode",
    "recovery_phrase",
    "private_key_pem",
    "gpg_passphrase",
    "smtp_password",
    ("redis_auth", "Redis password"),
    ("bearer", "Bearer token"),
    ("cookie", "Session cookie"),
    "sessionToken",
    "secret_access_key",
    "connection_password",
    "master_key",
    "auth_code",
    "otp_token",
    ("card", "Card number"),
]
HELD_OUT_BENIGN = [
    "nickname",
    "favorite_color",
    "pet_name",
    "secret_question_hint",
    "organization_id",
    "tenant",
    ("project_key", "Jira project key"),
    ("issue_key", "Issue key"),
    "translation_key",
    "i18n_key",
    "cache_key",
    ("key_signature", "Musical key"),
    "token_budget",
    "tokens_per_minute",
    "pin_color",
    "password_expiry_days",
    "public_key_url",
    "public_key",
    "account_type",
    ("card_title", "Card title"),
    "card_description",
    "cards_count",
    "security_contact_email",
    "login_hint",
    "auth_url",
    "key_length",
    "token_expiry_days",
    "code_review_notes",
    "passenger_name",
    "boarding_pass_number",
    "badge_number",
    "employee_id",
    "student_number",
    "credit_limit",
    "credit_score",
    "debit_amount",
    "card_holder",
    "pan_angle",
    "keyboard",
    "turnkey",
    "whiskey",
    "donkey",
    "phone_pin_reset_reason",
    "verification_method",
    "otp_enabled",
    "secret_scanning",
    "oauth_scopes",
    "tokenize",
]
MAX_HELD_OUT_FALSE_ALARM_RATE = 0.05
MAX_HELD_OUT_MISS_RATE = 0.15


def held_out_verdict(entry: str | tuple[str, str]) -> str:
    name, title = (entry, None) if isinstance(entry, str) else entry
    schema: dict[str, Any] = {"type": "string"} if title is None else {"type": "string", "title": title}
    return classify_field(name, schema).verdict


def test_held_out_rates_stay_under_their_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    false_alarms = [e for e in HELD_OUT_BENIGN if held_out_verdict(e) == "block"]
    misses = [e for e in HELD_OUT_SECRET if held_out_verdict(e) != "block"]
    false_alarm_rate = len(false_alarms) / len(HELD_OUT_BENIGN)
    miss_rate = len(misses) / len(HELD_OUT_SECRET)
    with capsys.disabled():
        print(
            f"\nsensitive (held out): false-alarm rate {false_alarm_rate:.1%} over {len(HELD_OUT_BENIGN)}, "
            f"miss rate {miss_rate:.1%} over {len(HELD_OUT_SECRET)}; misses {misses}"
        )
    assert false_alarm_rate <= MAX_HELD_OUT_FALSE_ALARM_RATE
    assert miss_rate <= MAX_HELD_OUT_MISS_RATE


# -- reason codes and the form-level verdict ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "schema", "code"),
    [
        ("password", {"type": "string"}, "password"),
        ("api_key", {"type": "string"}, "api_key"),
        ("card_number", {"type": "string"}, "card_number"),
        ("otp", {"type": "string"}, "otp"),
        ("cvv", {"type": "string"}, "card_security_code"),
        ("x", {"type": "string", "format": "password"}, "format:password"),
        ("x", {"type": "string", "autocomplete": "section-pay cc-number"}, "format:cc-number"),
        ("x", {"type": "string", "x-autocomplete": "one-time-code"}, "format:one-time-code"),
        ("x", {"type": "string", "x-secret": True}, "declared_sensitive"),
        ("ssn", {"type": "string"}, "national_id"),
        ("client_secret", {"type": "string"}, "client_secret"),
    ],
)
def test_each_signal_reports_its_stable_reason_code(name: str, schema: dict[str, Any], code: str) -> None:
    assert code in classify_field(name, schema).reasons


def test_a_boolean_about_a_password_is_ok_and_says_the_cap_applied() -> None:
    verdict = classify_field("remember_password", {"type": "boolean"})
    assert verdict == FieldVerdict("remember_password", "ok", ("password", "fixed_choices"))


def test_the_form_verdict_is_its_strongest_field_and_names_the_blocked_ones() -> None:
    schema = {
        "type": "object",
        "properties": {
            "email": {"type": "string"},
            "token": {"type": "string"},
            "password": {"type": "string"},
        },
    }
    form = classify_schema(schema)
    assert form.verdict == "block"
    assert form.blocked == ("password",)
    assert form.flagged == ("token", "password")
    assert [f.name for f in form.fields] == ["email", "token", "password"]


def test_a_message_about_a_password_warns_but_never_blocks() -> None:
    schema = {"type": "object", "properties": {"email": {"type": "string"}}}
    form = classify_schema(schema, "Enter your email and your password")
    assert form.verdict == "warn"
    assert form.message_reasons == ("message:password",)
    assert all(f.verdict == "ok" for f in form.fields)


def test_a_message_that_negates_the_secret_adds_nothing() -> None:
    form = classify_schema({"type": "object", "properties": {}}, "We will never ask for your password.")
    assert form.verdict == "ok"


def test_the_message_cannot_lower_a_blocked_field() -> None:
    schema = {"type": "object", "properties": {"pwd": {"type": "string"}}}
    assert classify_schema(schema, "Just a quick question").verdict == "block"


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        3,
        "password",
        [],
        {},
        {"properties": None},
        {"properties": ["password"]},
        {"properties": {"a": 1}},
    ],
)
def test_garbage_schemas_are_ok_and_never_raise(garbage: Any) -> None:
    assert classify_schema(garbage).verdict == "ok"


def test_non_dict_property_schemas_are_judged_by_name_only() -> None:
    form = classify_schema({"properties": {"password": "not a schema", "note": 7}})
    assert [(f.name, f.verdict) for f in form.fields] == [("password", "block"), ("note", "ok")]


def test_long_descriptions_are_read_like_short_ones() -> None:
    long = "Some context about the deployment. " * 20 + "Then type your password here."
    assert len(long) > 256  # past the cached length
    assert classify_field("value", {"type": "string", "description": long}).verdict == "block"


def test_non_string_titles_and_hints_are_skipped() -> None:
    verdict = classify_field("x", {"title": ["password"], "format": 3, "description": {"a": "b"}})
    assert verdict.verdict == "ok"


# -- tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("APIKey", ["api", "key"]),
        ("apiKey", ["api", "key"]),
        ("x-api-key", ["x", "api", "key"]),
        ("client.secret", ["client", "secret"]),
        ("cvv2", ["cvv", "2"]),
        ("2FA code", ["2", "fa", "code"]),
        ("dbPassword", ["db", "password"]),
        ("adminpassword", ["admin", "password"]),
        ("Secretary's email", ["secretary", "email"]),
        ("ＰＡＳＳＷＯＲＤ", ["password"]),
        ("Contraseña", ["contrasena"]),
        ("", []),
    ],
)
def test_tokenize_splits_every_naming_style_into_words(text: str, words: list[str]) -> None:
    assert tokenize(text) == words


def test_every_rule_and_benign_phrase_is_documented_in_the_guardrails_doc() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "guardrails.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"`{rule.phrase}`" in doc, rule
        assert f"`{rule.reason}`" in doc, rule
    for phrase in BENIGN_PHRASES:
        assert f"`{phrase}`" in doc, phrase


def test_every_rule_phrase_is_already_in_tokenized_form() -> None:
    for rule in RULES:
        if "flag" in rule.where:
            continue
        assert " ".join(tokenize(rule.phrase)) == rule.phrase, rule
        assert rule.why, rule
    for phrase in BENIGN_PHRASES:
        assert " ".join(tokenize(phrase)) == phrase


# -- never raises ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
field_schemas = st.dictionaries(
    st.sampled_from(
        ["type", "title", "description", "format", "autocomplete", "enum", "writeOnly", "x-secret"]
    ),
    json_values,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.one_of(st.none(), st.text(max_size=80)))
def test_classify_schema_never_raises_on_arbitrary_json(schema: Any, message: str | None) -> None:
    form = classify_schema(schema, message)
    assert form.verdict in ("ok", "warn", "block")


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=30), st.one_of(field_schemas, json_values), max_size=6))
def test_classify_schema_never_raises_on_arbitrary_properties(properties: dict[str, Any]) -> None:
    form = classify_schema({"type": "object", "properties": properties})
    assert len(form.fields) == len(properties)
    json.dumps([f.reasons for f in form.fields])
