//! Hand-written statements that diesel prepares once per connection and then reuses.
//!
//! Diesel's DSL has no common table expressions and no `UNION ALL` of unlike rows, and its
//! `sql_query` is never cached: every call is parsed and planned again (on PostgreSQL also
//! one more round trip, to prepare it). A [`Fixed`] statement has a constant text, so diesel
//! caches it under its Rust type like any DSL query: one round trip per execution.

use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Text};
use diesel::{QueryResult, RunQueryDsl};

/// A statement with constant text: its SQL, with `?` for each text parameter, and the
/// types of the columns it returns. Implemented by a unit type per statement, which is also
/// the statement's key in diesel's prepared-statement cache.
pub(crate) trait FixedSql: 'static {
    /// The statement; `?` marks a parameter (the text contains no other `?`).
    const SQL: &'static str;
    /// The column types of a row (a tuple of `diesel::sql_types`).
    type Row;
}

/// One execution of a [`FixedSql`] statement with its parameters, in order.
pub(crate) struct Fixed<'a, S> {
    params: &'a [&'a str],
    statement: PhantomData<S>,
}

impl<'a, S: FixedSql> Fixed<'a, S> {
    /// Binds `params` to the `?` of `S::SQL`, in order.
    pub(crate) fn new(params: &'a [&'a str]) -> Self {
        Self {
            params,
            statement: PhantomData,
        }
    }
}

impl<S: FixedSql> QueryId for Fixed<'_, S> {
    type QueryId = S;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<S: FixedSql> Query for Fixed<'_, S> {
    type SqlType = S::Row;
}

impl<S: FixedSql, DB> QueryFragment<DB> for Fixed<'_, S>
where
    DB: Backend + HasSqlType<Text>,
    str: ToSql<Text, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        // diesel walks a statement several times per execution (cache key, binds), so the
        // placeholders are found with memchr's vectorised search rather than `str::split`,
        // which cost about 5 000 instructions per describe (docs/performance.md).
        let mut params = self.params.iter();
        let sql = S::SQL;
        let mut start = 0;
        for at in memchr::memchr_iter(b'?', sql.as_bytes()) {
            out.push_sql(&sql[start..at]);
            let param: &'b str = params.next().ok_or_else(|| mismatch::<S>())?;
            out.push_bind_param::<Text, str>(param)?;
            start = at + 1;
        }
        out.push_sql(&sql[start..]);
        if params.next().is_some() {
            return Err(mismatch::<S>());
        }
        Ok(())
    }
}

impl<S: FixedSql, Conn> RunQueryDsl<Conn> for Fixed<'_, S> {}

fn mismatch<S>() -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError(
        format!(
            "{}: the parameters do not match the statement's placeholders",
            std::any::type_name::<S>()
        )
        .into(),
    )
}

#[cfg(test)]
mod tests {
    use diesel::prelude::*;
    use diesel::sql_types::Text;

    use super::{Fixed, FixedSql};

    struct Three;
    impl FixedSql for Three {
        const SQL: &'static str = "SELECT ? || '-', ?, ?";
        type Row = (Text, Text, Text);
    }

    #[test]
    fn parameters_bind_to_the_placeholders_in_order_and_must_match_them() {
        let conn = &mut SqliteConnection::establish(":memory:").unwrap();
        let row: (String, String, String) = Fixed::<Three>::new(&["a", "b", "c"])
            .get_result(conn)
            .unwrap();
        assert_eq!(row, ("a-".into(), "b".into(), "c".into()));
        for wrong in [&["a", "b"][..], &["a", "b", "c", "d"][..]] {
            let e = Fixed::<Three>::new(wrong)
                .get_result::<(String, String, String)>(conn)
                .unwrap_err();
            assert!(e.to_string().contains("placeholders"), "{e}");
        }
        // The statement still runs with the right parameters after a refusal.
        let again: (String, String, String) = Fixed::<Three>::new(&["x", "y", "z"])
            .get_result(conn)
            .unwrap();
        assert_eq!(again.0, "x-");
    }
}
