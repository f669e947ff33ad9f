"""The SQL facts: one read statement only, the base columns a query reads, and the masking rewrite."""

from __future__ import annotations

import contextlib

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.apps.data.sql import MAX_SQL_CHARS, masked_sql, parse_read_only, read_columns
from mcp_elicit.errors import QueryRefused
from tests.apps.data.stories import WRITES

SCHEMA = {
    "main": {
        "customers": {"id": "INT", "name": "TEXT", "email": "TEXT", "country": "TEXT"},
        "orders": {"id": "INT", "customer_id": "INT", "amount": "INT"},
    }
}
CUST, ORD = "main.customers", "main.orders"


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "trino"])
@pytest.mark.parametrize(
    "sql", [*WRITES, "COPY customers TO 'x.csv'", "SET x = 1", "SELECT * FROM t FOR UPDATE"]
)
def test_anything_but_one_read_statement_is_refused(sql: str, dialect: str) -> None:
    with pytest.raises(QueryRefused) as caught:
        parse_read_only(sql, dialect)
    assert caught.value.reason in ("not_read_only", "not_parsed")


@pytest.mark.parametrize(
    "sql", ["SELECT 1", "WITH a AS (SELECT 1 AS x) SELECT x FROM a", "SELECT 1 UNION SELECT 2"]
)
def test_reads_are_accepted(sql: str) -> None:
    assert parse_read_only(sql, "duckdb").text == sql


def test_unparseable_and_oversized_text_is_refused_with_its_own_reason() -> None:
    with pytest.raises(QueryRefused) as caught:
        parse_read_only("SELEC FROM (", "duckdb")
    assert caught.value.reason == "not_parsed"
    with pytest.raises(QueryRefused) as caught:
        parse_read_only("SELECT 1" + " " * MAX_SQL_CHARS, "duckdb")
    assert caught.value.reason == "not_parsed"


@given(st.text(max_size=200))
def test_the_read_only_check_never_fails_with_anything_but_a_refusal(text: str) -> None:
    with contextlib.suppress(QueryRefused):
        parse_read_only(text, "duckdb")


def cols(sql: str) -> set[tuple[str, str]]:
    return read_columns(parse_read_only(sql, "duckdb"), SCHEMA, "main")


def test_star_is_expanded_against_the_schema() -> None:
    assert cols("SELECT * FROM customers") == {
        (CUST, "id"),
        (CUST, "name"),
        (CUST, "email"),
        (CUST, "country"),
    }


def test_filters_joins_and_grouping_count_as_reads() -> None:
    sql = (
        "SELECT o.amount FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE c.email LIKE '%x' GROUP BY 1"
    )
    assert cols(sql) == {(ORD, "amount"), (ORD, "customer_id"), (CUST, "id"), (CUST, "email")}


def test_ctes_and_subqueries_resolve_to_their_base_columns() -> None:
    sql = (
        "WITH c AS (SELECT email AS contact, id FROM customers) "
        "SELECT x.contact FROM (SELECT contact FROM c) x "
        "WHERE EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = 1)"
    )
    assert cols(sql) == {(CUST, "email"), (CUST, "id"), (ORD, "customer_id")}


def test_an_unknown_column_is_refused() -> None:
    with pytest.raises(QueryRefused) as caught:
        cols("SELECT nope FROM customers")
    assert caught.value.reason == "unknown_column"


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_a_column_alias_list_maps_each_alias_to_the_column_it_renames(dialect: str) -> None:
    def read(sql: str) -> set[tuple[str, str]]:
        return read_columns(parse_read_only(sql, dialect), SCHEMA, "main")

    assert read("SELECT t.c FROM customers AS t(a, b, c)") == {(CUST, "email")}
    assert read("SELECT c FROM customers AS t(a, b, c) WHERE a = 1") == {(CUST, "email"), (CUST, "id")}
    assert read("SELECT * FROM customers AS t(email, id)") == {(CUST, c) for c in SCHEMA["main"]["customers"]}
    assert read("SELECT t.email FROM customers AS t(email, id)") == {(CUST, "id")}


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM hr.employees",
        "SELECT count(*) FROM hr.employees",
        "SELECT o.id FROM orders o JOIN hr.employees e ON e.id = o.id",
        "SELECT id FROM orders WHERE id IN (SELECT * FROM pg_catalog.pg_stats)",
    ],
)
def test_a_table_outside_the_catalog_is_refused(sql: str, dialect: str) -> None:
    with pytest.raises(QueryRefused) as caught:
        read_columns(parse_read_only(sql, dialect), SCHEMA, "main")
    assert caught.value.reason == "unknown_column"
    assert caught.value.detail


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x.* FROM customers c, LATERAL (SELECT c) x",  # qualify reads `c` as x's own column
        "SELECT x FROM (SELECT 1) AS t(x), customers AS x",  # a name both a column and a table
    ],
)
def test_a_whole_row_reference_the_guard_cannot_place_is_refused(sql: str, dialect: str) -> None:
    with pytest.raises(QueryRefused) as caught:
        read_columns(parse_read_only(sql, dialect), SCHEMA, "main")
    assert caught.value.reason == "opaque_source"


def test_a_postgres_name_made_quoted_is_read_with_its_own_case() -> None:
    schema = {"public": {"MixedCase": {"id": "int", "Email": "text", "EMAIL": "text"}}}

    def read(sql: str) -> set[tuple[str, str]]:
        return read_columns(parse_read_only(sql, "postgres"), schema, "public")

    assert read('SELECT "Email" FROM "MixedCase"') == {("public.MixedCase", "Email")}
    assert read('SELECT * FROM "MixedCase"') == {("public.MixedCase", c) for c in ("id", "Email", "EMAIL")}
    with pytest.raises(QueryRefused):
        read("SELECT email FROM mixedcase")  # unquoted, PostgreSQL folds it to a name that is not there


MASK = {(CUST, "email"), (CUST, "name")}


def masked_rows(sql: str) -> list[tuple[object, ...]]:
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE customers AS SELECT 1 AS id, 'Ada' AS name, 'ada@x.org' AS email, 'GB' AS country"
    )
    conn.execute("CREATE TABLE orders AS SELECT 7 AS id, 1 AS customer_id, 30 AS amount")
    rewritten = masked_sql(parse_read_only(sql, "duckdb"), SCHEMA, "main", MASK)
    return conn.execute(rewritten).fetchall()


def test_masking_nulls_masked_values_in_every_output_but_keeps_the_filters() -> None:
    assert masked_rows("SELECT * FROM customers WHERE email = 'ada@x.org'") == [(1, None, None, "GB")]
    assert masked_rows("SELECT upper(name) || '!' AS shout, country FROM customers") == [(None, "GB")]
    assert masked_rows("WITH c AS (SELECT email AS e FROM customers) SELECT e FROM c") == [(None,)]
    assert masked_rows("SELECT (SELECT max(email) FROM customers) AS m") == [(None,)]
    joined = "SELECT o.amount, c.name FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY c.email"
    assert masked_rows(joined) == [(30, None)]
    assert masked_rows("SELECT id FROM customers WHERE email IN (SELECT email FROM customers)") == [(1,)]
    joined_table = (
        "SELECT x.e FROM orders o JOIN (SELECT id, email AS e FROM customers) x ON x.id = o.customer_id"
    )
    assert masked_rows(joined_table) == [(None,)]
    lateral = (
        "SELECT x.e FROM orders o, LATERAL (SELECT email AS e FROM customers WHERE id = o.customer_id) x"
    )
    assert masked_rows(lateral) == [(None,)]
    on_subquery = "SELECT o.id FROM orders o JOIN customers c ON c.email = (SELECT max(email) FROM customers)"
    assert masked_rows(on_subquery) == [(7,)]  # a join condition still sees the real values


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT c FROM customers c",
        "SELECT to_json(c) FROM customers c",
        "SELECT row_to_json(c) FROM customers c",
        "SELECT customers FROM customers",
        "SELECT (SELECT c FROM customers c LIMIT 1) AS r",
        "SELECT row_to_json(c.*) FROM customers c",
        "SELECT CAST((c.*) AS TEXT) FROM customers c",
        "SELECT count(c.*) FROM customers c",
        "SELECT 1 FROM customers c WHERE CAST((c.*) AS TEXT) = ''",
        "SELECT 1 FROM customers c HAVING bool_or(c IS NULL)",
        "SELECT (SELECT CAST(c AS TEXT)) FROM customers c",
        "SELECT (SELECT row_to_json(c.*)) FROM customers c",
    ],
)
def test_a_whole_row_reference_reads_every_column_of_its_table(sql: str, dialect: str) -> None:
    read = read_columns(parse_read_only(sql, dialect), SCHEMA, "main")
    assert read == {(CUST, c) for c in SCHEMA["main"]["customers"]}


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "trino"])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM query_table('customers')",
        "SELECT * FROM query('SELECT email FROM customers')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM generate_series(1, (SELECT count(*) FROM customers))",
        "SELECT query_to_xml('select email from customers', true, false, '')",
        "SELECT table_to_xml('customers', true, false, '')",
        "SELECT * FROM dblink('dbname=x', 'select email from customers') AS t(e text)",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT getenv('HOME')",
        "SELECT ts_stat('SELECT to_tsvector(email) FROM customers')",
        "SELECT ts_rewrite('a', 'SELECT email, email FROM customers')",
        "SELECT current_setting('app.secret')",
        "SELECT dblink_open('c', 'select email from customers')",
        "SELECT loread(lo_open(1, 262144), 100)",
        "SELECT pg_ls_logdir()",
        "SELECT id FROM customers WHERE name IN (SELECT * FROM query_table('customers'))",
    ],
)
def test_what_reads_a_table_query_or_file_named_in_a_string_is_refused(sql: str, dialect: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, dialect)
    assert refused.value.reason == "opaque_source"
    assert refused.value.detail


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT pg_terminate_backend(pg_backend_pid())",
        "SELECT pg_advisory_lock(1)",
        "SELECT id FROM customers WHERE pg_cancel_backend(1)",
    ],
)
def test_a_function_that_changes_the_servers_state_is_refused(sql: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, "postgres")
    assert refused.value.reason == "not_read_only"


@pytest.mark.parametrize(
    ("sql", "article"),
    [("INSERT INTO t VALUES (1)", "an"), ("UPDATE t SET a = 1", "an"), ("DELETE FROM t", "a")],
)
def test_a_refused_statement_is_named_with_its_article(sql: str, article: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, "postgres")
    assert refused.value.reason == "not_read_only"
    assert refused.value.detail.split()[0] == article  # "an INSERT statement", not "a INSERT"


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("EXPLAIN SELECT 1", "EXPLAIN"),
        ("LISTEN x", "LISTEN"),
        ("CHECKPOINT", "CHECKPOINT"),
        ("CALL f()", "CALL"),
    ],
)
@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_a_refused_statement_is_named_as_written_not_as_the_parser_files_it(
    sql: str, name: str, dialect: str
) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, dialect)
    assert refused.value.reason == "not_read_only"
    assert refused.value.detail.split()[1] == name  # not "a COMMAND statement", "a COLUMN statement"


@pytest.mark.parametrize("sql", ["", "   ", "-- nothing but a comment", ";"])
def test_a_text_without_a_statement_is_not_parsed(sql: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, "postgres")
    assert refused.value.reason == "not_parsed"


def test_a_rows_from_source_is_refused_naming_what_it_reads() -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only("SELECT * FROM ROWS FROM (unnest(ARRAY[1])) AS r(x)", "postgres")
    assert refused.value.reason == "opaque_source"
    assert "ROWS FROM (UNNEST(ARRAY[1]))" in refused.value.detail  # not "reads from None"


def test_masking_nulls_a_whole_row_that_holds_a_masked_column() -> None:
    assert masked_rows("SELECT email, to_json(c) AS r FROM customers c") == [(None, None)]
    assert masked_rows("SELECT (SELECT CAST(c AS TEXT)) AS r FROM customers c") == [(None,)]
    unmasked = '{"id":7,"customer_id":1,"amount":30}'  # no masked column in orders: the row stays
    assert masked_rows("SELECT o.amount, to_json(o) AS r FROM orders o") == [(30, unmasked)]
