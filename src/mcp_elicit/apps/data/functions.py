"""Which functions a guarded query may call: an allow-list of built-ins per engine.

A function on the list computes only from its arguments (string, math, date and time,
aggregates, window functions, casts, JSON and array construction and access, conditionals), or
reads nothing at all (the clock, a random number). Any other function is refused before the
engine plans the query: it may read a table, a file, a setting or another session's state that
the guard cannot see (PostgreSQL's `pg_stat_get_backend_activity` shows the text of the same
role's other queries). Names are the engine's, as written in the query, case-folded.

Syntax that the parser turns into a function without a name of its own (`CAST(x AS int)`,
`x::int`, `CASE`, `EXTRACT(... FROM ...)`, `current_date`, operators such as `->>`) is the
engine's grammar, not a call by name, and is not checked here; on PostgreSQL an operator, cast
or domain the database made itself is looked up per query (`operators_and_words` gives the
operator runs and words to look up; `PostgresEngine.hidden_functions`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from sqlglot import TokenType, exp
from sqlglot.dialects import Dialect
from sqlglot.errors import SqlglotError

__all__ = [
    "ALLOWED_FUNCTIONS",
    "GRAMMAR",
    "SERIES_AS_VALUE",
    "SERIES_FUNCTIONS",
    "FunctionCall",
    "called_names",
    "function_calls",
    "parsed_as_grammar",
    "whole_number_arguments",
    "written_name",
]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Written like a call but read as SQL grammar by the engines (DuckDB: `ifnull`), so no function of
# that name is looked up.
GRAMMAR: Final = _names(
    "coalesce nullif greatest least grouping array row trim extract current_date current_time"
    " current_timestamp localtime localtimestamp percentile_cont percentile_disc ifnull any case"
    " cast try_cast if variadic char overlay xmlelement json_objectagg json_value"
)
# Found in more than one engine under the same name and meaning.
_COMMON = GRAMMAR | _names(
    """
    abs ceil ceiling floor round trunc sqrt cbrt power exp ln log log10 sign mod pi degrees radians
    sin cos tan asin acos atan atan2 cot sinh cosh tanh asinh acosh atanh gcd lcm greatest least
    random
    lower upper length char_length character_length octet_length bit_length substr substring left
    right lpad rpad ltrim rtrim replace reverse repeat concat concat_ws strpos position
    split_part starts_with translate ascii chr md5 sha256 format regexp_replace regexp_matches
    regexp_split_to_array string_to_array array_to_string to_hex encode decode
    now date_trunc date_part age make_date make_time make_timestamp make_timestamptz to_timestamp timezone
    count sum avg min max bool_and bool_or bit_and bit_or bit_xor stddev stddev_pop
    stddev_samp variance var_pop var_samp corr covar_pop covar_samp regr_avgx regr_avgy
    regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy string_agg array_agg
    mode
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    array_append array_prepend array_cat array_length array_position cardinality unnest
    to_json array_to_json row_to_json json_extract_path json_extract_path_text json_array_length
    json_object
    """
)

ALLOWED_FUNCTIONS: Final[dict[str, frozenset[str]]] = {
    "postgres": _COMMON
    | _names(
        """
        btrim every div factorial convert jsonb_exists
        min_scale scale trim_scale width_bucket acosd asind atand atan2d cosd cotd
        sind tand
        initcap normalize quote_ident quote_literal quote_nullable regexp_count regexp_instr
        regexp_like regexp_match regexp_substr regexp_split_to_table string_to_table to_ascii
        convert_from convert_to sha224 sha384 sha512 get_byte get_bit bit_count to_char to_date
        to_number unistr text
        clock_timestamp statement_timestamp transaction_timestamp date_bin isfinite justify_days
        justify_hours justify_interval make_interval
        json_agg jsonb_agg json_object_agg jsonb_object_agg jsonb_object range_agg
        range_intersect_agg xmlagg
        num_nulls num_nonnulls
        array_dims array_fill array_lower array_upper array_ndims array_positions array_remove
        array_replace trim_array
        to_jsonb json_build_array jsonb_build_array json_build_object jsonb_build_object
        jsonb_array_length json_each json_each_text jsonb_each jsonb_each_text jsonb_extract_path
        jsonb_extract_path_text json_object_keys jsonb_object_keys json_array_elements
        jsonb_array_elements json_array_elements_text jsonb_array_elements_text json_typeof
        jsonb_typeof json_strip_nulls jsonb_strip_nulls jsonb_set jsonb_set_lax jsonb_insert
        jsonb_pretty jsonb_path_exists jsonb_path_match jsonb_path_query jsonb_path_query_array
        jsonb_path_query_first
        isempty lower_inc upper_inc lower_inf upper_inf range_merge int4range int8range numrange
        tsrange tstzrange daterange
        to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank
        ts_rank_cd ts_headline setweight
        gen_random_uuid pg_typeof pg_size_pretty pg_size_bytes
        version current_database current_schema generate_series
        """
    ),
    "duckdb": _COMMON
    | _names(
        """
        pow log2 even factorial isnan isinf isfinite round_even xor fdiv fmod gamma lgamma
        nextafter bit_count
        lcase ucase len strlen instr contains ends_with suffix prefix string_split str_split
        string_split_regex regexp_extract regexp_extract_all regexp_full_match printf sha1 hash
        levenshtein damerau_levenshtein jaccard jaro_similarity jaro_winkler_similarity hamming
        mismatches editdist3 strip_accents nfc_normalize unicode ord base64 to_base64 from_base64
        hex unhex to_hex like_escape ilike_escape
        today datetrunc datepart date_diff datediff date_sub datesub date_add year month day
        dayofmonth dayofweek dayofyear week weekofyear weekday isodow isoyear quarter hour minute
        second millisecond microsecond epoch epoch_ms epoch_us epoch_ns strftime strptime
        try_strptime to_days to_hours to_minutes to_seconds to_months to_years to_weeks
        to_milliseconds to_microseconds last_day monthname dayname time_bucket yearweek era
        century decade millennium get_current_timestamp get_current_time transaction_timestamp
        mean median quantile quantile_cont quantile_disc approx_count_distinct approx_quantile
        first last any_value arbitrary arg_max arg_min argmax argmin max_by min_by group_concat
        listagg list histogram product fsum sumkahan kahan_sum entropy kurtosis skewness favg
        count_if countif count_star mad reservoir_quantile approx_top_k
        list_value list_pack array_value list_extract list_element array_extract list_slice
        array_slice list_contains list_has array_contains array_has list_position list_concat
        array_concat list_cat list_append list_prepend list_distinct array_distinct list_sort
        array_sort list_reverse_sort list_reverse list_transform array_transform apply list_apply
        list_filter array_filter filter list_reduce array_reduce reduce list_unique
        list_aggregate list_aggr array_aggregate array_aggr aggregate flatten list_sum list_min
        list_max list_avg list_count list_zip struct_pack struct_extract row struct_insert map
        map_extract map_keys map_values element_at
        json json_extract json_extract_string json_value json_exists json_keys json_type
        json_valid json_array json_structure json_merge_patch json_group_array json_group_object
        json_quote json_transform
        typeof gen_random_uuid uuid
        version current_database current_schema generate_series range
        """
    ),
    "trino": _COMMON
    | _names(
        """
        pow log2 truncate rand e infinity nan is_nan is_finite is_infinite from_base from_utf8
        to_utf8 from_hex to_base64 from_base64 sha1 sha512 xxhash64 split regexp_like
        regexp_extract regexp_extract_all regexp_split regexp_count regexp_position levenshtein_distance
        hamming_distance normalize codepoint luhn_check soundex word_stem
        date_add date_diff date_format date_parse format_datetime parse_datetime year month day
        day_of_week dow day_of_month day_of_year doy week week_of_year year_of_week yow quarter
        hour minute second millisecond from_unixtime to_unixtime from_iso8601_timestamp
        from_iso8601_date to_iso8601 last_day_of_month with_timezone at_timezone
        to_milliseconds human_readable_seconds current_timezone
        count_if arbitrary any_value approx_distinct approx_percentile approx_most_frequent
        min_by max_by checksum geometric_mean kurtosis skewness map_agg multimap_agg histogram
        listagg
        contains element_at array_join array_distinct array_sort array_max array_min
        array_remove array_except array_intersect array_union arrays_overlap slice sequence
        transform filter reduce zip zip_with map map_keys map_values map_entries map_from_entries
        map_concat flatten shuffle
        json_extract json_extract_scalar json_format json_parse json_array_get
        json_array_contains json_size json_query json_value json_exists json_array
        if try typeof uuid
        """
    ),
}


# Functions that make a series of numbers: allowed only with whole-number literal arguments, so the
# planner counts the rows exactly (PostgreSQL's support function; DuckDB from the arguments) rather
# than guessing (PostgreSQL guesses 1,000 rows for a series of timestamps or one from a subquery).
# In FROM on both engines; as a value only on PostgreSQL: DuckDB's `range(n)` as a value is a list
# it builds whole while it plans the query, before any estimate.
SERIES_FUNCTIONS: Final[dict[str, frozenset[str]]] = {
    "postgres": frozenset({"generate_series"}),
    "duckdb": frozenset({"generate_series", "range"}),
}
SERIES_AS_VALUE: Final[dict[str, frozenset[str]]] = {"postgres": frozenset({"generate_series"})}


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """One call by name in a query: `name` as written (case-folded, unquoted) and `schema`, the
    qualifier written before it ("" when unqualified)."""

    name: str
    schema: str

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


def function_calls(tree: exp.Expression, text: str) -> Iterable[FunctionCall]:
    """Every call by name in `tree`, the parse of `text`: a function node whose name the parser
    read from the text (it keeps the name token's place), with the name as written there, so
    an alias the parser maps to another function (`substr` read as SUBSTRING) is checked under
    its own name."""
    for func in tree.find_all(exp.Func):
        name = written_name(func, text)
        if name is None:
            continue  # grammar: CAST, CASE, EXTRACT, operators, current_date
        parent = func.parent
        schema = ""
        if isinstance(parent, exp.Dot) and parent.expression is func:
            schema = _unquoted(parent.this.sql()) if isinstance(parent.this, exp.Expression) else "?"
        yield FunctionCall(name, schema)


def written_name(func: exp.Expr, text: str) -> str | None:
    """The name a function node was called by in `text` (unquoted, case-folded), from the place the
    parser kept for it; None for grammar, which keeps none."""
    start, end = func.meta.get("start"), func.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    return _unquoted(text[start : end + 1])


def whole_number_arguments(func: exp.Expr) -> bool:
    """True when every argument of `func` is a whole-number literal (`1`, `-5`, `10000000000`)."""
    for value in func.args.values():
        for arg in value if isinstance(value, list) else [value]:
            if arg is None or isinstance(arg, bool):
                continue
            number = arg.this if isinstance(arg, exp.Neg) else arg
            if not (isinstance(number, exp.Literal) and not number.is_string and str(number.this).isdigit()):
                return False
    return True


_WORD: Final = re.compile(r'["`]?[^\W\d]')


def _unquoted(name: str) -> str:
    return name.strip().strip('"`[]').casefold()


def parsed_as_grammar(dialect: str) -> frozenset[str]:
    """Names (case-folded) the dialect's parser reads with a parser of their own, which keeps no
    place for the name (`string_agg(...)`, `initcap(...)`, `gap_fill(...)`): such a call is
    checked by its name among `called_names`."""
    parser = Dialect.get_or_raise(dialect).parser_class
    return frozenset(k.casefold() for k in (*parser.FUNCTION_PARSERS, *parser.NO_PAREN_FUNCTION_PARSERS))


def called_names(text: str, dialect: str) -> frozenset[str]:
    """Every word followed by `(` in `text`, case-folded: each name the engine might look up as a
    function, including those the parser reads as grammar (`initcap(x)`, `string_agg(...)`) and
    those it maps to another name (`substr`). More than the calls (a table alias list `t(a, b)`
    is one): used to look names up, where one too many costs a lookup, not a refusal."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except SqlglotError:  # the parser already read this text; a failure here names nothing
        return frozenset()
    return frozenset(
        _unquoted(token.text)
        for token, following in itertools.pairwise(tokens)
        if following.token_type is TokenType.L_PAREN and _WORD.match(token.text)
    )


# The characters PostgreSQL builds an operator name from.
_OPERATOR_CHARS: Final = frozenset("+-*/<>=~!@#%^&|`?")
_QUOTED: Final = frozenset(
    {
        TokenType.STRING,
        TokenType.BIT_STRING,
        TokenType.HEX_STRING,
        TokenType.BYTE_STRING,
        TokenType.NATIONAL_STRING,
        TokenType.NATIONAL_RAW_STRING,
        TokenType.RAW_STRING,
        TokenType.HEREDOC_STRING,
        TokenType.UNICODE_STRING,
    }
)
_OPERATOR_RUN: Final = re.compile(r"[+\-*/<>=~!@#%^&|`?]+")


def operators_and_words(text: str, dialect: str) -> tuple[frozenset[str], frozenset[str]]:
    """What the text may name outside a call: the runs of operator characters written outside
    string literals and quoted names (`a <+> b`, `OPERATOR(s.<+>)`: "<+>"; a run holds every
    operator written within it), and every word, quoted names unquoted, case-folded (a type in
    `x::money2`, a table). Used to look up the database's own operators, casts and types, so a
    run or a word too many costs a lookup, never a missed one."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except SqlglotError:
        return frozenset(), frozenset()
    runs: list[str] = []
    words: set[str] = set()
    code: list[str] = []
    last_end = -2
    for token in tokens:
        if token.token_type in _QUOTED:
            code.append(" ")
            last_end = -2
            continue
        raw = text[token.start : token.end + 1]
        if token.token_type is TokenType.IDENTIFIER:
            words.add(token.text.casefold())
            code.append(" ")
        else:
            code.append(raw if token.start == last_end + 1 else " " + raw)
            words.update(w.casefold() for w in re.findall(r"[^\W\d]\w*", raw))
        last_end = token.end
    runs.extend(_OPERATOR_RUN.findall("".join(code)))
    return frozenset(runs), frozenset(words)
