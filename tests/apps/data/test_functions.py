"""The allow-list of built-in functions: a query may call only functions known to compute from
their arguments; any other is refused by name before the engine plans the query."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.apps.data.functions import ALLOWED_FUNCTIONS, GRAMMAR
from mcp_elicit.apps.data.sql import parse_read_only, refuse_database_functions
from mcp_elicit.errors import QueryRefused

# What an analyst writes every day, on each engine: none of it may be refused by the allow-list.
ORDINARY = {
    "postgres": [
        "SELECT date_trunc('month', t), sum(x), avg(x), count(DISTINCT y), count(*) FROM o GROUP BY 1",
        "SELECT lower(a), upper(a), substr(a, 1, 3), split_part(a, '-', 2), initcap(a), length(a) FROM o",
        "SELECT coalesce(a, 'n/a'), nullif(a, ''), greatest(x, 1), CASE WHEN x > 1 THEN 1 END FROM o",
        "SELECT CAST(x AS int), x::text, extract(year FROM t), to_char(t, 'YYYY-MM'), now() FROM o",
        "SELECT t - interval '7 days', current_date, age(t), make_date(2026, 1, 1) FROM o",
        "SELECT rank() OVER (ORDER BY x), lag(x) OVER w, row_number() OVER () FROM o WINDOW w AS ()",
        "SELECT string_agg(a, ','), array_agg(x ORDER BY t), sum(x) FILTER (WHERE y > 1) FROM o",
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), stddev(x), round(avg(x)::numeric, 2) FROM o",
        "SELECT j->>'k', j->'k', jsonb_build_object('a', x), json_agg(x), to_jsonb(x) FROM o",
        "SELECT ARRAY[1, 2], cardinality(ARRAY[1]), unnest(ARRAY[1, 2]), x IN (1, 2) FROM o",
        "SELECT regexp_replace(a, '[0-9]+', ''), a ILIKE 'x%', position('a' IN a), trim(a) FROM o",
        "SELECT pg_catalog.lower(a), abs(x), floor(x), ceil(x), power(x, 2), mod(x, 7) FROM o",
        "SELECT pg_size_pretty(x::bigint), pg_typeof(x), width_bucket(x, 0, 10, 2), random() FROM o",
    ],
    "duckdb": [
        "SELECT date_trunc('month', t), sum(x), avg(x), count(DISTINCT y), count(*) FROM o GROUP BY 1",
        "SELECT median(x), quantile_cont(x, 0.9), mode(a), arg_max(a, x), count_if(x > 1) FROM o",
        "SELECT strftime(t, '%Y-%m'), year(t), datediff('day', t, current_date), today() FROM o",
        "SELECT list(a ORDER BY x)[1:3], string_agg(a, ','), unnest([1, 2]), len([1]) FROM o",
        "SELECT ifnull(a, 'x'), regexp_matches(a, 'x'), contains(a, 'x'), printf('%d', x) FROM o",
        "SELECT to_json({'a': x}), json_extract(j, '$.a'), j->>'a', struct_pack(a := x) FROM o",
    ],
}


@pytest.mark.parametrize(("dialect", "sql"), [(d, q) for d, qs in ORDINARY.items() for q in qs])
def test_ordinary_analytics_calls_only_allowed_functions(dialect: str, sql: str) -> None:
    assert parse_read_only(sql, dialect).text == sql


@pytest.mark.parametrize(
    ("sql", "dialect", "named"),
    [
        ("SELECT pg_stat_get_backend_activity(1)", "postgres", "pg_stat_get_backend_activity()"),
        ("SELECT pg_catalog.pg_stat_get_activity(NULL)", "postgres", "pg_catalog.pg_stat_get_activity()"),
        ("SELECT id FROM t WHERE inet_client_addr() IS NULL", "postgres", "inet_client_addr()"),
        ("SELECT PG_BACKEND_PID()", "postgres", "pg_backend_pid()"),
        ("SELECT util.lower(a) FROM t", "postgres", "util.lower()"),
        ("SELECT getenv('HOME')", "duckdb", "getenv()"),
        ("SELECT current_setting('memory_limit')", "duckdb", "current_setting()"),
        ("SELECT main.email_of(1)", "duckdb", "main.email_of()"),
        ("SELECT no_such_function(1)", "trino", "no_such_function()"),
        ("SELECT max_by(a, x) FROM t", "postgres", "max_by()"),  # read by a parser of its own
        ("SELECT weight_string(a) FROM t", "duckdb", "weight_string()"),
    ],
)
def test_a_function_off_the_allow_list_is_refused_by_name(sql: str, dialect: str, named: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(sql, dialect)
    assert refused.value.reason == "opaque_source"
    assert named in refused.value.detail


def test_every_allowed_name_is_a_duckdb_built_in() -> None:
    import duckdb

    with duckdb.connect() as conn:
        built_in = {r[0] for r in conn.execute("SELECT function_name FROM duckdb_functions()").fetchall()}
    assert ALLOWED_FUNCTIONS["duckdb"] - GRAMMAR <= built_in


def test_every_allowed_name_is_a_postgres_built_in(postgres_dsn: tuple[str, str]) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn[0]) as conn:
        rows = conn.execute(
            "SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'pg_catalog'"
        ).fetchall()
    assert ALLOWED_FUNCTIONS["postgres"] - GRAMMAR <= {r[0] for r in rows}


@pytest.mark.parametrize("sql", ["SELECT substr(a, 1) FROM t", 'SELECT "SUBSTR"(a, 1) FROM t'])
def test_a_database_function_is_found_by_the_name_written_not_the_parsers_own(sql: str) -> None:
    # the parser reads substr as SUBSTRING; PostgreSQL looks up substr
    with pytest.raises(QueryRefused) as refused:
        refuse_database_functions(parse_read_only(sql, "postgres"), frozenset({"substr"}))
    assert refused.value.reason == "opaque_source"
    refuse_database_functions(parse_read_only(sql, "postgres"), frozenset({"substring"}))


# Places a call can stand in a query; {f} is the function's name.
PLACES = [
    "SELECT {f}(x) FROM t",
    "SELECT {f}(DISTINCT x ORDER BY y) FILTER (WHERE y > 1) FROM t",
    "SELECT {f}(x) OVER (PARTITION BY y) FROM t",
    'SELECT "{f}"(x) FROM t',
    "SELECT {f} /* gap */ (x) FROM t",
    "SELECT x FROM t WHERE {f}(x) AND y IN (SELECT {f}(1))",
    "SELECT x FROM t ORDER BY {f}(x) LIMIT 1",
    "SELECT x FROM t GROUP BY ROLLUP({f}(x))",
    "SELECT CAST({f}(x) AS int), ({f}(x)).a, {f}(x)[1] FROM t",
    "SELECT x FROM t JOIN u ON {f}(t.x) = u.x",
    "WITH a AS (SELECT {f}(1) AS v) SELECT v FROM a",
    "SELECT * FROM t, LATERAL (SELECT {f}(t.x)) AS s",
    "SELECT CASE WHEN x > 1 THEN {f}(x) END FROM t",
    "SELECT 1 UNION ALL SELECT {f}(1)",
]


@given(
    name=st.from_regex(r"f_[a-z0-9_]{1,12}", fullmatch=True),
    place=st.sampled_from(PLACES),
    dialect=st.sampled_from(["postgres", "duckdb", "trino"]),
)
def test_an_unlisted_function_is_refused_wherever_it_is_called(name: str, place: str, dialect: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        parse_read_only(place.format(f=name), dialect)
    assert refused.value.reason in ("opaque_source", "not_parsed")
