"""Each engine's own estimate and catalog, on the real DuckDB file and the real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_elicit.apps.data import open_engine
from mcp_elicit.apps.data.catalog import DataConfig, config_from_mapping
from mcp_elicit.apps.data.duckdb import plan_estimate
from mcp_elicit.apps.data.trino import TrinoEngine
from mcp_elicit.errors import ConfigError, DataEngineError, QueryRefused
from tests.apps.data.conftest import CATALOG, PG_EVENTS, Target
from tests.apps.data.stories import CountingEngine


def test_a_join_reports_each_table_the_engine_plans_to_read(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        estimate = engine.estimate(
            "SELECT c.country, count(*) FROM events e JOIN customers c ON c.id = e.customer_id GROUP BY 1"
        )
        events, customers = f"{target.schema}.events", f"{target.schema}.customers"
        assert set(estimate.tables) == {events, customers}
        assert estimate.largest is not None
        assert estimate.largest[0] == events
        assert estimate.total == estimate.tables[events] + estimate.tables[customers]
    finally:
        engine.close()


def test_a_join_that_multiplies_rows_asks_though_it_reads_few(target: Target) -> None:
    from mcp_elicit.apps.data.assess import assess
    from mcp_elicit.apps.data.server import refusal_detail

    engine = open_engine(target.engine, target.dsn)
    try:
        # PostgreSQL: 2,000 rows read, 1,000,000 pairs (limit 10,000); DuckDB: 6,000 and 5,000,000
        other = "customers" if target.engine == "postgres" else "orders"
        sql = f"SELECT count(*) FROM customers a CROSS JOIN {other} b WHERE a.id + b.id > 3"
        seen = assess(engine, target.config, sql, can_ask=True)
        assert seen.estimate is not None
        assert seen.estimate.total <= seen.thresholds.total < seen.estimate.processed
        assert seen.decision.kind == "ask"
        assert [(e.table, e.processed) for e in seen.decision.exceeded] == [("", True)]
        refused = assess(engine, target.config, sql, can_ask=False).decision
        assert "one step of the plan" in refusal_detail(refused)
        assert "join on a condition" in refusal_detail(refused)
        plain = assess(
            engine, target.config, "SELECT country, count(*) FROM customers GROUP BY 1", can_ask=True
        )
        assert plain.decision.kind == "run"
    finally:
        engine.close()


def test_column_comments_come_back_with_the_tables(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        tables = {t.qualified: t for t in engine.tables()}
        customers = tables[f"{target.schema}.customers"]
        comments = {c.name: c.comment for c in customers.columns}
        assert comments["email"] == "pii: contact address"
        assert comments["segment"] == "non-pii: marketing segment"
    finally:
        engine.close()


def test_an_engine_that_cannot_plan_says_so(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        with pytest.raises(DataEngineError) as caught:
            engine.estimate("SELECT * FROM no_such_table")
        assert caught.value.engine == target.engine
    finally:
        engine.close()


def test_duckdb_quoted_catalog_names_are_read() -> None:
    plan = [
        {
            "name": "SEQ_SCAN",
            "children": [],
            "extra_info": {"Table": '"sample".main.t', "Estimated Cardinality": "5"},
        }
    ]
    assert dict(plan_estimate(plan).tables) == {"main.t": 5.0}


def test_bad_engine_choices_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        open_engine("oracle")
    with pytest.raises(ConfigError):
        open_engine("postgres", None)
    with pytest.raises(DataEngineError):
        TrinoEngine("postgresql://localhost/db")


def test_a_postgres_view_carries_the_tags_of_every_column_it_reads(postgres_dsn: tuple[str, str]) -> None:
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    other = f"{schema}_other"
    views = {  # each reads personal data without naming a tagged column of its own
        "contacts": "SELECT id, email FROM customers",  # a comment on the column read
        "contact_ids": "SELECT id FROM contacts WHERE email LIKE 'c%'",  # a view of a view
        "phones": "SELECT phone AS number FROM customers",  # a tag from the TOML catalog only
        "staff": f"SELECT row_to_json(s) AS j FROM {other}.staff s",  # a whole row, another schema
        "segments": "SELECT segment, count(*) AS n FROM customers GROUP BY segment",  # no personal data
    }
    admin = dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {other}")
        conn.execute(f"CREATE TABLE {other}.staff (id int, ssn text)")
        conn.execute(f"COMMENT ON COLUMN {other}.staff.ssn IS 'sensitive'")
        for name, body in views.items():
            conn.execute(f"CREATE VIEW {schema}.{name} AS {body.replace('FROM c', f'FROM {schema}.c')}")
    engine = open_engine("postgres", dsn)
    config = config_from_mapping(CATALOG)
    try:
        for name in ("contacts", "contact_ids", "phones", "staff"):
            decision = assess(engine, config, f"SELECT * FROM {name}", can_ask=True).decision
            assert decision.kind == "ask", name
            assert decision.pii, name
        assert assess(engine, config, "SELECT * FROM segments", can_ask=True).decision.kind == "run"
    finally:
        engine.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP VIEW {', '.join(f'{schema}.{v}' for v in reversed(views))}")
            conn.execute(f"DROP SCHEMA {other} CASCADE")


def test_a_duckdb_view_carries_the_tags_of_every_column_it_reads(tmp_path: Path) -> None:
    import duckdb

    from mcp_elicit.apps.data.assess import assess

    path = str(tmp_path / "views.duckdb")
    with duckdb.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INT, email TEXT, segment TEXT)")
        conn.execute("COMMENT ON COLUMN customers.email IS 'pii'")
        conn.execute("INSERT INTO customers VALUES (1, 'a@example.org', 'retail')")
        conn.execute("CREATE VIEW contacts AS SELECT email AS address FROM customers")
        conn.execute("CREATE VIEW contact_ids AS SELECT 1 AS one FROM contacts WHERE address LIKE 'a%'")
        conn.execute("CREATE VIEW segments AS SELECT segment FROM customers")
        conn.execute("CREATE VIEW opaque AS SELECT * FROM query_table('customers')")
    engine = open_engine("duckdb", path)
    try:
        names = {t.name for t in engine.tables()}
        assert "opaque" not in names  # a view the guard cannot follow is not served
        for name in ("contacts", "contact_ids"):
            decision = assess(engine, DataConfig(), f"SELECT * FROM {name}", can_ask=True).decision
            assert decision.kind == "ask", name
        assert assess(engine, DataConfig(), "SELECT * FROM segments", can_ask=True).decision.kind == "run"
        with pytest.raises(QueryRefused):
            assess(engine, DataConfig(), "SELECT * FROM opaque", can_ask=True)
    finally:
        engine.close()


def test_a_parallel_postgres_scan_counts_the_rows_of_every_process(postgres_dsn: tuple[str, str]) -> None:
    dsn, schema = postgres_dsn
    # Costs that make the planner pick a parallel scan even on the small test table (per process,
    # its Plan Rows are a fraction of the table's).
    parallel = "-c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0"
    encoded = parallel.replace(" ", "%20").replace("=", "%3D")
    engine = open_engine("postgres", dsn.replace("options=", f"options={encoded}%20"))
    try:
        estimate = engine.estimate("SELECT count(*) FROM events")
        assert estimate.tables[f"{schema}.events"] == pytest.approx(PG_EVENTS, rel=0.01)
    finally:
        engine.close()


def test_a_lost_postgres_connection_costs_one_statement_not_the_server(postgres_dsn: tuple[str, str]) -> None:
    import psycopg

    dsn, _ = postgres_dsn
    engine = open_engine("postgres", dsn)
    try:
        pid = engine.run("SELECT pg_backend_pid()", 1).rows[0][0]
        with psycopg.connect(dsn.split("?")[0], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(DataEngineError):
            engine.run("SELECT 1", 1)  # the statement that finds the connection gone
        assert engine.run("SELECT 1", 1).rows == ((1,),)
        assert engine.tables()
    finally:
        engine.close()


def test_a_postgres_query_fetches_only_the_rows_it_returns(postgres_dsn: tuple[str, str]) -> None:
    dsn, _ = postgres_dsn
    engine = open_engine("postgres", dsn)
    try:
        # 400 million rows: received whole, they would run into the statement timeout (and memory)
        result = engine.run("SELECT a.id, b.id FROM events a, events b", 10)
        assert len(result.rows) == 10
        assert result.truncated
        assert engine.run("SELECT 1 AS x", 10).rows == ((1,),)  # the named cursor is gone after each run
    finally:
        engine.close()


def test_a_postgres_partition_or_child_table_carries_its_parents_comments(
    postgres_dsn: tuple[str, str],
) -> None:
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    admin = dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {schema}.leads (id int, email text, region text) PARTITION BY LIST (region)"
        )
        conn.execute(f"CREATE TABLE {schema}.leads_eu PARTITION OF {schema}.leads FOR VALUES IN ('eu')")
        conn.execute(f"CREATE TABLE {schema}.leads_eu_vip (tier int) INHERITS ({schema}.customers)")
        conn.execute(f"COMMENT ON COLUMN {schema}.leads.email IS 'pii'")
    engine = open_engine("postgres", dsn)
    try:
        for sql in ("SELECT email FROM leads_eu", "SELECT name FROM leads_eu_vip"):
            decision = assess(engine, DataConfig(), sql, can_ask=True).decision
            assert decision.kind == "ask", sql
            assert decision.pii, sql
        assert assess(engine, DataConfig(), "SELECT id FROM leads_eu", can_ask=True).decision.kind == "run"
    finally:
        engine.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP TABLE {schema}.leads, {schema}.leads_eu_vip")


def test_a_function_written_in_the_database_is_refused_before_it_is_planned(
    target: Target, tmp_path: Path
) -> None:
    from mcp_elicit.apps.data.assess import assess

    if target.engine == "postgres":
        import psycopg

        admin = target.dsn.split("?")[0]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION {target.schema}.email_of(int) RETURNS text LANGUAGE sql STABLE "
                f"AS 'SELECT email FROM {target.schema}.customers WHERE id = $1'"
            )
        dsn = target.dsn
    else:
        import duckdb

        dsn = str(tmp_path / "macro.duckdb")
        with duckdb.connect(dsn) as conn:
            conn.execute("CREATE TABLE customers (id INT, email TEXT)")
            conn.execute("CREATE MACRO email_of(i) AS (SELECT email FROM customers WHERE id = i)")
    # a view calling it, and a view of that view: neither served, as what they read is unknown
    views = [
        ("order_emails", "SELECT id, email_of(id) AS e FROM customers"),
        ("order_ids", "SELECT id FROM order_emails"),
    ]
    if target.engine == "postgres":
        with psycopg.connect(admin, autocommit=True) as conn:
            for name, body in views:
                conn.execute(f"SET search_path = {target.schema}")
                conn.execute(f"CREATE VIEW {target.schema}.{name} AS {body}")
    else:
        with duckdb.connect(dsn) as conn:
            for name, body in views:
                conn.execute(f"CREATE VIEW {name} AS {body}")
    engine = CountingEngine(open_engine(target.engine, dsn))
    try:
        for sql in ("SELECT email_of(1)", "SELECT EMAIL_OF(1) AS e"):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, DataConfig(), sql, can_ask=True)
            assert refused.value.reason == "opaque_source"
        assert engine.planned == []  # refused before EXPLAIN: planning may run an immutable function
        for sql in ("SELECT e FROM order_emails", "SELECT * FROM order_ids"):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, DataConfig(), sql, can_ask=True)
            assert refused.value.reason == "unknown_column", sql
    finally:
        engine.close()
        if target.engine == "postgres":
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP FUNCTION {target.schema}.email_of(int) CASCADE")


def test_a_postgres_materialized_view_is_served_with_the_tags_of_the_columns_it_reads(
    postgres_dsn: tuple[str, str],
) -> None:
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    admin = dsn.split("?")[0]
    views = {  # each reads personal data without a tag of its own, but the last
        "mv_contacts": f"SELECT id, email FROM {schema}.customers",  # a comment on the column read
        "mv_phones": f"SELECT phone AS number FROM {schema}.customers",  # a tag from the TOML catalog
        "mv_rows": f"SELECT c AS whole FROM {schema}.customers c",  # a whole row
        "mv_of_mv": f"SELECT id FROM {schema}.mv_contacts WHERE email LIKE 'c%'",  # over another one
        "mv_segments": f"SELECT segment, count(*) AS n FROM {schema}.customers GROUP BY segment",
    }
    with psycopg.connect(admin, autocommit=True) as conn:
        for name, body in views.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {schema}.{name} AS {body}")
    engine = open_engine("postgres", dsn)
    config = config_from_mapping(CATALOG)
    try:
        served = {t.name: t for t in engine.tables()}
        assert [c.name for c in served["mv_contacts"].columns] == ["id", "email"]
        assert served["mv_segments"].columns[1].type == "bigint"
        for name in ("mv_contacts", "mv_phones", "mv_rows", "mv_of_mv"):
            decision = assess(engine, config, f"SELECT * FROM {name}", can_ask=True).decision
            assert decision.kind == "ask", name
            assert decision.pii, name
        cheap = assess(engine, config, "SELECT * FROM mv_segments", can_ask=True)
        assert cheap.decision.kind == "run"
        assert cheap.estimate is not None
        assert set(cheap.estimate.tables) == {f"{schema}.mv_segments"}
        assert len(engine.run("SELECT * FROM mv_segments", 10).rows) == 2
    finally:
        engine.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in reversed(views):
                conn.execute(f"DROP MATERIALIZED VIEW {schema}.{name}")


def test_a_postgres_partition_or_child_table_carries_its_parents_catalog_tags(
    postgres_dsn: tuple[str, str],
) -> None:
    """Tags given in the TOML catalog name the parent; a partition, a child table and a view over
    either carry them as comments already are carried."""
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    admin = dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {schema}.prospects (id int, mail text, region text) PARTITION BY LIST (region)"
        )
        conn.execute(
            f"CREATE TABLE {schema}.prospects_eu PARTITION OF {schema}.prospects FOR VALUES IN ('eu') "
            "PARTITION BY LIST (id)"
        )
        conn.execute(
            f"CREATE TABLE {schema}.prospects_eu_1 PARTITION OF {schema}.prospects_eu FOR VALUES IN (1)"
        )
        conn.execute(f"CREATE TABLE {schema}.customers_vip (tier int) INHERITS ({schema}.customers)")
        conn.execute(f"CREATE VIEW {schema}.eu_mail AS SELECT mail FROM {schema}.prospects_eu_1")
    engine = open_engine("postgres", dsn)
    config = config_from_mapping({"tables": {"prospects": {"columns": {"mail": "pii"}}, **CATALOG["tables"]}})
    try:
        served = {t.name: t for t in engine.tables()}
        assert served["prospects_eu_1"].parents == (f"{schema}.prospects_eu", f"{schema}.prospects")
        for sql in (
            "SELECT mail FROM prospects_eu",
            "SELECT mail FROM prospects_eu_1",
            "SELECT phone FROM customers_vip",  # phone is tagged on customers in CATALOG only
            "SELECT * FROM eu_mail",
        ):
            decision = assess(engine, config, sql, can_ask=True).decision
            assert decision.kind == "ask", sql
            assert decision.pii, sql
        assert assess(engine, config, "SELECT id FROM prospects_eu_1", can_ask=True).decision.kind == "run"
    finally:
        engine.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP VIEW {schema}.eu_mail")
            conn.execute(f"DROP TABLE {schema}.prospects, {schema}.customers_vip")


def test_a_built_in_stays_allowed_when_a_namesake_in_the_database_is_not_the_one_that_runs(
    target: Target, tmp_path: Path
) -> None:
    from mcp_elicit.apps.data.assess import assess

    util = f"{target.schema}_util" if target.engine == "postgres" else "util"
    if target.engine == "postgres":
        import psycopg

        dsn, admin = target.dsn, target.dsn.split("?")[0]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {util}")
            # off the search path: only util.lower(...) reaches it
            conn.execute(f"CREATE FUNCTION {util}.lower(text) RETURNS text LANGUAGE sql AS $$SELECT 'util'$$")
            # on the path, same argument types as pg_catalog.initcap(text), which comes first: hidden
            conn.execute(
                f"CREATE FUNCTION {target.schema}.initcap(text) RETURNS text LANGUAGE sql AS $$SELECT 'own'$$"
            )
            # on the path with argument types of its own: upper(1) would run it
            conn.execute(
                f"CREATE FUNCTION {target.schema}.upper(integer) RETURNS text LANGUAGE sql AS $$SELECT 'x'$$"
            )
    else:
        import duckdb

        dsn = str(tmp_path / "namesakes.duckdb")
        with duckdb.connect(dsn) as conn:
            conn.execute("CREATE TABLE customers AS SELECT 1 AS id, 'Retail' AS segment")
            conn.execute(f"CREATE SCHEMA {util}")
            conn.execute(f"CREATE MACRO {util}.lower(x) AS 'util'")
            conn.execute("CREATE MACRO upper(x) AS 'own'")  # DuckDB runs this one before its built-in
    engine = open_engine(target.engine, dsn)
    try:
        second = "initcap" if target.engine == "postgres" else "trim"  # DuckDB has no initcap
        sql = f"SELECT lower(segment) AS l, {second}(segment) AS i FROM customers ORDER BY id LIMIT 1"
        seen = assess(engine, DataConfig(), sql, can_ask=True)
        assert seen.decision.kind == "run"
        assert engine.run(sql, 1).rows == (("retail", "Retail"),)  # the built-ins ran
        for refused_sql in (
            f"SELECT {util}.lower(segment) FROM customers",
            "SELECT upper(segment) FROM customers",
        ):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, DataConfig(), refused_sql, can_ask=True)
            assert refused.value.reason == "opaque_source", refused_sql
    finally:
        engine.close()
        if target.engine == "postgres":
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {util} CASCADE")
                conn.execute(f"DROP FUNCTION {target.schema}.initcap(text), {target.schema}.upper(integer)")


def test_a_postgres_operator_cast_or_domain_over_a_function_of_the_database_is_refused_like_a_call_of_it(
    postgres_dsn: tuple[str, str],
) -> None:
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    admin = dsn.split("?")[0]
    peek = f"(SELECT count(*) FROM {schema}.customers)::int"  # reads a table the query does not name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        conn.execute(
            f"CREATE FUNCTION peek(int, int) RETURNS bool LANGUAGE sql AS $$SELECT $1 + $2 < {peek}$$"
        )
        conn.execute("CREATE OPERATOR @> (leftarg = int, rightarg = int, function = peek)")
        conn.execute(
            f"CREATE FUNCTION peek_like(int, text) RETURNS bool LANGUAGE sql AS $$SELECT $1 < {peek}$$"
        )
        conn.execute("CREATE OPERATOR ~~ (leftarg = int, rightarg = text, function = peek_like)")
        conn.execute("CREATE TYPE amount AS (v int)")
        conn.execute(
            f"CREATE FUNCTION to_amount(int) RETURNS amount LANGUAGE sql AS $$SELECT ROW({peek})::amount$$"
        )
        conn.execute("CREATE CAST (int AS amount) WITH FUNCTION to_amount(int)")
        conn.execute(f"CREATE FUNCTION small(int) RETURNS bool LANGUAGE sql AS $$SELECT $1 < {peek}$$")
        conn.execute("CREATE DOMAIN small_id AS int CHECK (small(VALUE))")
        # over built-ins only: nothing hidden
        conn.execute("CREATE OPERATOR && (leftarg = int, rightarg = int, function = int4eq)")
        conn.execute("CREATE DOMAIN positive AS int CHECK (VALUE > 0 AND length(VALUE::text) < 9)")
    engine = CountingEngine(open_engine("postgres", dsn))
    try:
        for sql, function in (
            ("SELECT id @> 1 FROM events", "peek"),
            (f"SELECT id OPERATOR({schema}.@>) 1 FROM events", "peek"),
            ("SELECT id::amount FROM events", "to_amount"),
            ("SELECT CAST(id AS small_id) FROM events", "small"),
            ("SELECT id FROM events WHERE id LIKE '1%'", "peek_like"),  # LIKE is the operator ~~
        ):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, DataConfig(), sql, can_ask=True)
            assert refused.value.reason == "opaque_source", sql
            assert f"{function}()" in refused.value.detail
        assert engine.planned == []  # refused before EXPLAIN, which may run them
        fine = "SELECT id && 1, id::positive, id + 1 FROM events ORDER BY id"
        assert assess(engine, DataConfig(), fine, can_ask=True).decision.kind in ("run", "ask")
    finally:
        engine.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"SET search_path = {schema}")
            conn.execute("DROP OPERATOR @> (int, int), && (int, int), ~~ (int, text)")
            conn.execute("DROP CAST (int AS amount)")
            conn.execute("DROP DOMAIN small_id, positive")
            conn.execute("DROP FUNCTION peek(int, int), peek_like(int, text), to_amount(int), small(int)")
            conn.execute("DROP TYPE amount")


def test_a_limit_over_a_plain_scan_counts_the_rows_it_takes_and_one_over_a_sort_or_aggregate_the_whole_table(
    target: Target,
) -> None:
    from mcp_elicit.apps.data.assess import assess

    engine = open_engine(target.engine, target.dsn)
    try:
        events = f"{target.schema}.events"
        taken = assess(engine, target.config, "SELECT * FROM events LIMIT 10", can_ask=True)
        assert taken.estimate is not None
        assert 10 <= taken.estimate.tables[events] < 10_000  # what it takes (DuckDB: a vector per thread)
        assert taken.estimate.processed <= taken.estimate.total
        assert taken.decision.kind == "run"
        if target.engine == "postgres":  # the OFFSET is read too (DuckDB plans one as a join)
            skipped = engine.estimate("SELECT * FROM events LIMIT 10 OFFSET 500")
            assert 510 <= skipped.tables[events] < 600
        for blocking in (
            "SELECT * FROM events ORDER BY kind LIMIT 10",
            "SELECT kind, count(*) FROM events GROUP BY kind LIMIT 10",
        ):
            seen = assess(engine, target.config, blocking, can_ask=True)
            assert seen.estimate is not None
            assert seen.estimate.tables[events] >= seen.thresholds.total, blocking
            assert seen.decision.kind == "ask", blocking
    finally:
        engine.close()


def test_a_postgres_subquery_run_once_per_outer_row_counts_its_rows_each_time(
    postgres_dsn: tuple[str, str],
) -> None:
    from mcp_elicit.apps.data.assess import assess

    dsn, schema = postgres_dsn
    config = config_from_mapping(CATALOG)
    engine = open_engine("postgres", dsn)
    try:
        per_row = (
            "SELECT c.id, (SELECT count(*) FROM events e WHERE e.customer_id = c.id) AS n FROM customers c"
        )
        once = engine.estimate("SELECT count(*) FROM events e WHERE e.customer_id = 7")
        seen = assess(engine, config, per_row, can_ask=True)
        assert seen.estimate is not None
        # the subquery runs for each of the 1,000 customers
        assert seen.estimate.tables[f"{schema}.events"] >= 1_000 * once.tables[f"{schema}.events"]
        assert seen.decision.kind == "ask"
        hashed = engine.estimate("SELECT id FROM customers WHERE id IN (SELECT customer_id FROM events)")
        assert hashed.tables[f"{schema}.events"] <= PG_EVENTS  # run once, not per row
    finally:
        engine.close()


def test_a_query_the_engine_cannot_plan_is_refused_in_one_bounded_line_that_says_it_was_not_run(
    target: Target,
) -> None:
    from mcp_elicit.apps.data.assess import assess
    from mcp_elicit.apps.data.guard import Decision
    from mcp_elicit.apps.data.server import refusal_detail
    from mcp_elicit.apps.data.wording import MAX_QUOTED_ENGINE_CHARS

    engine = open_engine(target.engine, target.dsn)
    try:
        # DuckDB's error lists every candidate function; PostgreSQL's quotes the EXPLAIN it ran
        sql = (
            "SELECT abs(kind) FROM events"
            if target.engine == "duckdb"
            else "SELECT id FROM events WHERE id = 'x'"
        )
        seen = assess(engine, target.config, sql, can_ask=True)
        assert seen.decision.category == "no_estimate"
        assert "\n" in seen.no_estimate_why  # the engine's own text runs on
        detail = refusal_detail(seen.decision, seen.no_estimate_why)
        assert "not run" in detail
        assert "could not plan" in detail
        for internal in ("Candidate", "EXPLAIN", "LINE 1", "^", "\n"):
            assert internal not in detail
        assert len(detail) < MAX_QUOTED_ENGINE_CHARS + 120
    finally:
        engine.close()
    crashed = refusal_detail(
        Decision("refuse", "no_estimate"),
        "duckdb: INTERNAL Error: Attempted to access index 3 within vector of size 3\nStack Trace: 0x7f",
    )
    assert "not run" in crashed
    assert "Attempted" not in crashed
    assert "Stack" not in crashed


def test_version_and_a_series_of_whole_numbers_run_and_a_long_series_asks_as_its_rows_are_counted(
    target: Target,
) -> None:
    from mcp_elicit.apps.data.assess import assess

    engine = open_engine(target.engine, target.dsn)
    try:
        for sql in (
            "SELECT version(), current_database(), current_schema()",
            "SELECT count(*) FROM generate_series(1, 1000) AS g(x)",
            "SELECT c.id, g.x FROM customers c CROSS JOIN generate_series(1, 3) AS g(x) WHERE c.id < 2",
        ):
            seen = assess(engine, target.config, sql, can_ask=True)
            assert seen.decision.kind == "run", sql
            assert engine.run(sql, 10).rows
        long = assess(
            engine, target.config, "SELECT max(x) FROM generate_series(1, 100000000) AS g(x)", can_ask=True
        )
        assert long.estimate is not None
        assert long.estimate.processed >= 100_000_000
        assert long.decision.kind == "ask"
        for refused_sql in (
            "SELECT pg_stat_get_backend_activity(1)",
            "SELECT * FROM generate_series(1, (SELECT max(id) FROM customers))",  # rows guessed, not counted
            "SELECT c.id FROM customers c, generate_series(1, c.id) AS g(x)",
        ):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, target.config, refused_sql, can_ask=True)
            assert refused.value.reason == "opaque_source", refused_sql
    finally:
        engine.close()


def test_duckdb_answers_a_whole_table_count_from_its_stored_statistics_so_it_reads_no_rows(
    sample_db: Path,
) -> None:
    import duckdb

    from mcp_elicit.apps.data.assess import assess

    engine = open_engine("duckdb", str(sample_db))
    try:
        whole = assess(engine, DataConfig(), "SELECT count(*) FROM events", can_ask=True)
        assert whole.estimate is not None
        assert whole.estimate.total == 0  # the plan is one constant row: no scan at all
        assert whole.decision.kind == "run"
        filtered = engine.estimate("SELECT count(*) FROM events WHERE kind = 'click'")
        assert filtered.tables["main.events"] > 0  # a filter needs the scan, and it is counted
    finally:
        engine.close()
    # the engine's own settings: DuckDB refuses a second connection to a file open with others
    with duckdb.connect(str(sample_db), read_only=True, config={"enable_external_access": False}) as conn:
        profile = conn.execute("EXPLAIN ANALYZE SELECT count(*) FROM events").fetchall()[0][1]
    assert "Table Scan" not in profile  # as run, not only as planned


def test_a_filtered_scan_counts_the_whole_table_it_reads_not_the_rows_that_pass(target: Target) -> None:
    from mcp_elicit.apps.data.assess import assess

    engine = open_engine(target.engine, target.dsn)
    try:
        events = f"{target.schema}.events"
        whole = engine.estimate("SELECT id FROM events").tables[events]
        seen = assess(engine, target.config, "SELECT id FROM events WHERE customer_id = 5", can_ask=True)
        assert seen.estimate is not None
        assert seen.estimate.tables[events] >= whole  # every row is read to find the few that pass
        assert seen.decision.kind == "ask"
        if target.engine == "postgres":  # an index lookup reads only what it finds
            found = engine.estimate("SELECT country FROM customers WHERE id = 5")
            assert found.tables[f"{target.schema}.customers"] <= 1
    finally:
        engine.close()


def test_a_recursive_with_is_refused_as_its_rows_are_a_guess(target: Target) -> None:
    from mcp_elicit.apps.data.assess import assess

    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000000)"
    sql += " SELECT count(*) FROM r"
    engine = open_engine(target.engine, target.dsn)
    try:
        if target.engine == "duckdb":  # PostgreSQL's estimate refuses it from the plan itself
            guessed = engine.estimate(sql)  # the planner's own guess for what makes 5,000,000 rows
            assert guessed.total + guessed.processed < 5_000_000
        with pytest.raises(QueryRefused) as refused:
            assess(engine, target.config, sql, can_ask=True)
        assert refused.value.reason == "opaque_source"
        reading = "WITH RECURSIVE r(id) AS (SELECT id FROM customers WHERE id = 0"
        reading += " UNION ALL SELECT c.id FROM customers c JOIN r ON c.id = r.id + 1) SELECT count(*) FROM r"
        with pytest.raises(QueryRefused) as refused:
            assess(engine, target.config, reading, can_ask=True)
        assert refused.value.reason == "opaque_source"
        plain = assess(
            engine, target.config, "WITH c AS (SELECT id FROM customers) SELECT count(*) FROM c", can_ask=True
        )
        assert plain.decision.kind == "run"  # a WITH that is not recursive is planned as before
    finally:
        engine.close()


def test_a_duckdb_query_still_running_after_the_statement_timeout_is_stopped(sample_db: Path) -> None:
    from mcp_elicit.apps.data.duckdb import STATEMENT_TIMEOUT_SECONDS, DuckDBEngine

    assert STATEMENT_TIMEOUT_SECONDS == 30  # as PostgreSQL's statement_timeout here
    engine = DuckDBEngine(str(sample_db), statement_timeout=0.2)
    try:
        with pytest.raises(DataEngineError):  # 1.44 trillion pairs: hours, were it not stopped
            engine.run("SELECT count(*) FROM events a, events b", 10)
        assert engine.run("SELECT count(*) FROM customers", 10).rows == ((1000,),)  # the next one runs
    finally:
        engine.close()


def test_a_duckdb_column_named_by_its_position_is_refused_as_the_guard_cannot_see_which(
    sample_db: Path,
) -> None:
    import duckdb

    from mcp_elicit.apps.data.assess import assess

    # what DuckDB does with it: `#3` is the third column of customers, the email address
    with duckdb.connect(str(sample_db), read_only=True, config={"enable_external_access": False}) as conn:
        assert conn.execute("SELECT #3 FROM customers WHERE id = 0").fetchall() == [
            ("customer0@example.org",)
        ]
    engine = open_engine("duckdb", str(sample_db))
    try:
        for sql in (
            "SELECT #3 FROM customers",
            "FROM customers SELECT #2, #3",
            "SELECT id FROM customers WHERE #3 > ''",
        ):
            with pytest.raises(QueryRefused) as refused:
                assess(engine, DataConfig(), sql, can_ask=True)
            assert refused.value.reason == "unknown_column", sql
        assert (
            assess(
                engine, DataConfig(), "SELECT country FROM customers GROUP BY 1", can_ask=True
            ).decision.kind
            == "run"
        )
    finally:
        engine.close()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * LIKE '%mail' FROM customers",
        "SELECT * GLOB '*mail' FROM customers",
        "SELECT * SIMILAR TO 'e.*' FROM customers",
        "SELECT * NOT LIKE 'id' FROM customers",  # every column but id
    ],
)
def test_duckdb_columns_picked_by_a_pattern_of_their_names_are_refused(sample_db: Path, sql: str) -> None:
    import duckdb

    from mcp_elicit.apps.data.assess import assess

    with duckdb.connect(str(sample_db), read_only=True, config={"enable_external_access": False}) as conn:
        row = conn.execute(f"{sql} WHERE id = 0").fetchall()[0]  # what DuckDB returns for it
    assert "customer0@example.org" in row
    engine = open_engine("duckdb", str(sample_db))
    try:
        with pytest.raises(QueryRefused) as refused:
            assess(engine, DataConfig(), sql, can_ask=True)
        assert refused.value.reason == "unknown_column"
        expanded = assess(engine, DataConfig(), "SELECT * ILIKE '%MAIL' FROM customers", can_ask=True)
        assert [c.column for c in expanded.decision.pii] == ["email"]  # one the parser expands is followed
    finally:
        engine.close()


def test_a_postgres_view_with_a_recursive_with_is_refused_from_its_plan(target: Target) -> None:
    import psycopg

    from mcp_elicit.apps.data.assess import assess

    if target.engine != "postgres":
        pytest.skip("DuckDB does not serve a view it cannot follow, a recursive one among them")
    body = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000000) SELECT n FROM r"
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE VIEW {target.schema}.rec AS {body}")
    engine = open_engine(target.engine, target.dsn)
    try:
        with pytest.raises(QueryRefused) as refused:  # the query's own text has no WITH
            assess(engine, target.config, "SELECT count(*) FROM rec", can_ask=True)
        assert refused.value.reason == "opaque_source"
    finally:
        engine.close()
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"DROP VIEW {target.schema}.rec")
