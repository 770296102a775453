#!/usr/bin/env node
// Measures how Durable Object SQLite behaves inside workerd, driven through Miniflare 4.
//
// Usage (from the repository root):
//   npm install
//   node e2e/dosqlite/measure.mjs > e2e/dosqlite/measured.json
//
// The script starts Miniflare with one inline ES module. The module defines a SQLite-backed
// Durable Object class (`Tenant`) whose fetch handler runs one group of probes and answers
// with JSON. Every group runs in its own Durable Object instance (a separate database), so
// that state changed by one group (pragmas, tables, alarms) cannot leak into another.
// Every probe has its own try/catch and its own table names.
//
// Output: a single JSON document on stdout, object keys sorted, 2-space indent. Anything
// else (workerd's own output) goes to stderr. Nothing but loopback is contacted: the
// Request.cf lookup is disabled with `cf: false`.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// Miniflare from where the Go harness installed it (STILE_NODE_DIR, see
// host/workerd.NodeDir).
const nodeDir = process.env.STILE_NODE_DIR;
if (!nodeDir) throw new Error("STILE_NODE_DIR is not set: run this through the Go test, which installs Miniflare");
const { Miniflare } = await import(pathToFileURL(createRequire(nodeDir + "/").resolve("miniflare")).href);

const HERE = dirname(fileURLToPath(import.meta.url));
const COMPATIBILITY_DATE = "2026-08-01";

// ---------------------------------------------------------------------------------------------
// Everything inside buildSuite() runs inside workerd. It is serialized with
// Function.prototype.toString(), so it must not refer to anything outside its own body.
// ---------------------------------------------------------------------------------------------
function buildSuite(DurableObject) {
  const MAX_ROWS = 40;
  const MAX_STRING = 300;

  // JSON-safe encoding of a value that came out of (or went into) SQLite.
  function enc(v) {
    if (v === null) return null;
    if (v === undefined) return { $undefined: true };
    switch (typeof v) {
      case "number":
        if (Number.isNaN(v)) return { $number: "NaN" };
        if (v === Infinity) return { $number: "Infinity" };
        if (v === -Infinity) return { $number: "-Infinity" };
        if (Object.is(v, -0)) return { $number: "-0" };
        return v;
      case "bigint":
        return { $bigint: v.toString() };
      case "string":
        if (v.length <= MAX_STRING) return v;
        return { $string: { length: v.length, head: v.slice(0, 40) } };
      case "boolean":
        return v;
      case "symbol":
        return { $symbol: String(v) };
      case "function":
        return { $function: v.name || "(anonymous)" };
    }
    if (v instanceof ArrayBuffer) {
      const out = { $ArrayBuffer: { byteLength: v.byteLength } };
      if (v.byteLength <= 64) out.$ArrayBuffer.hex = hex(new Uint8Array(v));
      return out;
    }
    if (ArrayBuffer.isView(v)) {
      const u8 = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      const out = { $view: { type: v.constructor.name, byteLength: v.byteLength } };
      if (v.byteLength <= 64) out.$view.hex = hex(u8);
      return out;
    }
    if (Array.isArray(v)) return v.map(enc);
    if (v instanceof Date) return { $Date: v.toISOString() };
    const o = {};
    for (const k of Object.keys(v)) o[k] = enc(v[k]);
    return o;
  }

  function hex(u8) {
    let s = "";
    for (const b of u8) s += b.toString(16).padStart(2, "0");
    return s;
  }

  function jsType(v) {
    if (v === null) return "null";
    if (typeof v !== "object") return typeof v;
    return (v.constructor && v.constructor.name) || "object";
  }

  function errInfo(e) {
    if (e instanceof Error) {
      return { name: e.name, message: e.message, constructor: e.constructor.name };
    }
    return { nonError: true, type: typeof e, value: enc(e) };
  }

  function sqlField(sql) {
    if (sql.length <= 400) return { sql };
    const bytes = new TextEncoder().encode(sql).length;
    return { sqlHead: sql.slice(0, 60), sqlBytes: bytes, sqlChars: sql.length };
  }

  // Runs one statement string through ctx.storage.sql.exec and describes the outcome.
  function exec(ctx, sql, params = [], opts = {}) {
    const rec = sqlField(sql);
    if (params.length) rec.params = params.map(enc);
    try {
      const cur = ctx.storage.sql.exec(sql, ...params);
      const rows = opts.raw ? cur.raw().toArray() : cur.toArray();
      rec.ok = true;
      rec.columnNames = cur.columnNames;
      rec.rowCount = rows.length;
      rec.rows = rows.slice(0, opts.maxRows ?? MAX_ROWS).map(enc);
      if (rows.length > (opts.maxRows ?? MAX_ROWS)) rec.rowsTruncated = true;
      rec.rowsRead = cur.rowsRead;
      rec.rowsWritten = cur.rowsWritten;
      if (opts.types && rows.length) {
        const first = rows[0];
        rec.firstRowJsTypes = Array.isArray(first)
          ? first.map(jsType)
          : Object.fromEntries(Object.entries(first).map(([k, v]) => [k, jsType(v)]));
      }
    } catch (e) {
      rec.ok = false;
      rec.error = errInfo(e);
    }
    return rec;
  }

  // Runs setup SQL. It is recorded on the probe list (id "setup") so a replay of the probes
  // rebuilds the same tables; a setup failure is recorded too but never throws.
  function setup(ctx, out, sql, params = []) {
    try {
      ctx.storage.sql.exec(sql, ...params).toArray();
      const rec = { id: "setup", ...sqlField(sql), ok: true };
      if (params.length) rec.params = params.map(enc);
      out.push(rec);
    } catch (e) {
      out.push({ id: "setup-failure", ...sqlField(sql), ok: false, error: errInfo(e) });
    }
  }

  function one(ctx, sql, ...params) {
    return ctx.storage.sql.exec(sql, ...params).toArray()[0];
  }

  // A probe that is an action rather than one SQL string.
  function action(out, id, description, fn) {
    const rec = { id, action: description };
    try {
      const r = fn();
      rec.ok = true;
      if (r !== undefined) rec.result = r;
    } catch (e) {
      rec.ok = false;
      rec.error = errInfo(e);
    }
    out.push(rec);
  }

  function probe(ctx, out, id, sql, params, opts) {
    out.push({ id, ...exec(ctx, sql, params, opts) });
  }

  // -------------------------------------------------------------------------------------------
  // Group: transaction statements
  // -------------------------------------------------------------------------------------------
  function groupTransactions(ctx) {
    const out = [];
    const stmts = [
      "BEGIN",
      "BEGIN TRANSACTION",
      "BEGIN DEFERRED",
      "BEGIN IMMEDIATE",
      "BEGIN EXCLUSIVE",
      "BEGIN DEFERRED TRANSACTION",
      "COMMIT",
      "COMMIT TRANSACTION",
      "END",
      "END TRANSACTION",
      "ROLLBACK",
      "ROLLBACK TRANSACTION",
      "SAVEPOINT sp",
      "RELEASE sp",
      "RELEASE SAVEPOINT sp",
      "ROLLBACK TO sp",
      "ROLLBACK TO SAVEPOINT sp",
      "ROLLBACK TRANSACTION TO SAVEPOINT sp",
      "begin",
      "commit",
      "savepoint sp",
      "  /* x */ BEGIN",
      "-- x\nBEGIN",
      "\n\tBEGIN;",
      "BEGIN;",
      "SAVEPOINT _cf_sp",
      'SAVEPOINT "sp two"',
      "SELECT 1; BEGIN",
      "BEGIN; SELECT 1",
    ];
    for (const s of stmts) probe(ctx, out, "txstmt", s);

    // Does a write that precedes a rejected BEGIN in the same exec() survive?
    probe(ctx, out, "txstmt-multi-write-then-begin", "CREATE TABLE tx_multi(a); BEGIN");
    probe(
      ctx,
      out,
      "txstmt-multi-write-then-begin.check",
      "SELECT name FROM sqlite_master WHERE name = 'tx_multi'",
    );

    // The same statements inside transactionSync.
    for (const s of ["BEGIN", "SAVEPOINT sp", "RELEASE sp", "COMMIT", "ROLLBACK"]) {
      const rec = { id: "txstmt-inside-transactionSync", sql: s };
      try {
        ctx.storage.transactionSync(() => {
          const r = exec(ctx, s);
          rec.inner = r;
        });
        rec.ok = true;
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: pragmas
  // -------------------------------------------------------------------------------------------
  // name -> { arg?: argument for the function form, write?: value for `= value`,
  //           tvf?: table-valued call }
  const PRAGMAS = {
    analysis_limit: { write: "0" },
    application_id: { write: "0" },
    auto_vacuum: { write: "NONE" },
    automatic_index: { write: "ON" },
    busy_timeout: { write: "0" },
    cache_size: { write: "-2000" },
    cache_spill: { write: "ON" },
    case_sensitive_like: { write: "OFF" },
    cell_size_check: { write: "OFF" },
    checkpoint_fullfsync: { write: "OFF" },
    collation_list: {},
    compile_options: {},
    count_changes: { write: "OFF" },
    data_store_directory: {},
    data_version: { write: "1" },
    database_list: {},
    default_cache_size: { write: "2000" },
    defer_foreign_keys: { write: "OFF" },
    empty_result_callbacks: { write: "OFF" },
    encoding: { write: "'UTF-8'" },
    foreign_key_check: { arg: "pt" },
    foreign_key_list: { arg: "pt" },
    foreign_keys: { write: "ON" },
    freelist_count: {},
    full_column_names: { write: "OFF" },
    fullfsync: { write: "OFF" },
    function_list: {},
    hard_heap_limit: { write: "0" },
    ignore_check_constraints: { write: "OFF" },
    incremental_vacuum: { arg: "1" },
    index_info: { arg: "pt_b" },
    index_list: { arg: "pt" },
    index_xinfo: { arg: "pt_b" },
    integrity_check: { arg: "1" },
    journal_mode: {},
    journal_size_limit: { write: "-1" },
    legacy_alter_table: { write: "OFF" },
    legacy_file_format: { write: "OFF" },
    locking_mode: { write: "NORMAL" },
    max_page_count: { write: "1073741823" },
    mmap_size: { write: "0" },
    module_list: {},
    optimize: { arg: "2" },
    page_count: {},
    page_size: { write: "4096" },
    parser_trace: { write: "OFF" },
    pragma_list: {},
    query_only: { write: "OFF" },
    quick_check: { arg: "1" },
    read_uncommitted: { write: "OFF" },
    recursive_triggers: { write: "OFF" },
    reverse_unordered_selects: { write: "OFF" },
    schema_version: {},
    secure_delete: {},
    short_column_names: { write: "ON" },
    shrink_memory: {},
    soft_heap_limit: { write: "0" },
    stats: {},
    synchronous: {},
    table_info: { arg: "pt" },
    table_list: { arg: "pt" },
    table_xinfo: { arg: "pt" },
    temp_store: { write: "DEFAULT" },
    temp_store_directory: {},
    threads: { write: "0" },
    trusted_schema: {},
    user_version: { write: "0" },
    vdbe_addoptrace: { write: "OFF" },
    vdbe_debug: { write: "OFF" },
    vdbe_listing: { write: "OFF" },
    vdbe_trace: { write: "OFF" },
    wal_autocheckpoint: { write: "1000" },
    wal_checkpoint: { arg: "PASSIVE" },
    writable_schema: { write: "OFF" },
  };
  // Pragmas whose read form needs an argument to mean anything; the table-valued form gets it.
  const TVF_ARG = {
    foreign_key_list: "'pt'",
    index_info: "'pt_b'",
    index_list: "'pt'",
    index_xinfo: "'pt_b'",
    table_info: "'pt'",
    table_xinfo: "'pt'",
  };

  function groupPragmas(ctx) {
    const out = [];
    setup(
      ctx,
      out,
      "CREATE TABLE pt(id INTEGER PRIMARY KEY, a TEXT UNIQUE, b INTEGER REFERENCES pt(id))",
    );
    setup(ctx, out, "CREATE INDEX pt_b ON pt(b)");
    setup(ctx, out, "INSERT INTO pt(id, a, b) VALUES (1, 'x', NULL), (2, 'y', 1)");

    for (const [name, spec] of Object.entries(PRAGMAS)) {
      out.push({ id: "pragma", pragma: name, form: "read", ...exec(ctx, `PRAGMA ${name}`) });
      if (spec.arg !== undefined) {
        out.push({
          id: "pragma",
          pragma: name,
          form: "arg",
          ...exec(ctx, `PRAGMA ${name}(${spec.arg})`),
        });
      }
      if (spec.write !== undefined) {
        out.push({
          id: "pragma",
          pragma: name,
          form: "write",
          ...exec(ctx, `PRAGMA ${name} = ${spec.write}`),
        });
      }
      const tvf = TVF_ARG[name] ? `pragma_${name}(${TVF_ARG[name]})` : `pragma_${name}`;
      out.push({ id: "pragma", pragma: name, form: "tvf", ...exec(ctx, `SELECT * FROM ${tvf}`) });
    }

    // Argument checking of the allowed pragmas.
    const extra = [
      "PRAGMA table_info(_cf_KV)",
      "PRAGMA table_info('_cf_KV')",
      "PRAGMA table_xinfo(_cf_KV)",
      "PRAGMA index_list(_cf_KV)",
      "PRAGMA foreign_key_list(_cf_KV)",
      "PRAGMA foreign_key_check(_cf_KV)",
      "PRAGMA quick_check(_cf_KV)",
      "PRAGMA quick_check(pt)",
      "PRAGMA quick_check(-1)",
      "PRAGMA table_info(no_such_table)",
      "PRAGMA table_list(_cf_KV)",
      "SELECT * FROM pragma_table_info('_cf_KV')",
      "SELECT * FROM pragma_table_list WHERE name NOT LIKE 'sqlite%'",
      "SELECT * FROM pragma_compile_options",
      "SELECT name FROM pragma_table_list ORDER BY name",
      "PRAGMA main.table_info(pt)",
      "PRAGMA temp.table_info(pt)",
      "PRAGMA main.foreign_keys",
      "PRAGMA main.table_list",
      "PRAGMA FOREIGN_KEYS",
      "PRAGMA Foreign_Keys = ON",
      "PRAGMA TABLE_INFO(pt)",
      "PRAGMA TABLE_LIST",
      "PRAGMA QUICK_CHECK",
      "SELECT * FROM PRAGMA_TABLE_INFO('pt')",
      "PRAGMA foreign_keys",
      "PRAGMA optimize",
      "PRAGMA optimize = 2",
      "PRAGMA optimize(0x10002)",
      "PRAGMA optimize = -1",
      "PRAGMA optimize = 4294967295",
      "PRAGMA optimize = abc",
      "PRAGMA foreign_key_check",
      "PRAGMA foreign_key_check(pt)",
      "PRAGMA quick_check",
      "PRAGMA integrity_check",
      "PRAGMA data_version",
      "PRAGMA data_version(1)",
      "PRAGMA page_size",
      "PRAGMA page_size = 4096",
      "PRAGMA page_size(4096)",
    ];
    for (const s of extra) probe(ctx, out, "pragma-extra", s);

    // Spellings accepted as a boolean value.
    const boolValues = [
      "1", "0", "'1'", "ON", "off", "On", "yes", "no", "true", "FALSE", "'on'", '"off"',
      "2", "-1", "10", "onion", "nothing", "truex", "''", "NULL", "full", "x",
    ];
    for (const v of boolValues) {
      probe(ctx, out, "pragma-bool-spelling", `PRAGMA case_sensitive_like = ${v}`);
    }
    probe(ctx, out, "pragma-bool-spelling", "PRAGMA case_sensitive_like(1)");
    probe(ctx, out, "pragma-bool-spelling", "PRAGMA case_sensitive_like = OFF");

    // Default values of the writable booleans in a fresh object.
    for (const n of [
      "foreign_keys", "defer_foreign_keys", "case_sensitive_like", "ignore_check_constraints",
      "legacy_alter_table", "recursive_triggers", "reverse_unordered_selects",
    ]) {
      probe(ctx, out, "pragma-default", `SELECT * FROM pragma_${n}`);
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: statements and functions
  // -------------------------------------------------------------------------------------------
  async function groupFeatures(ctx) {
    const out = [];
    const p = (id, sql, params, opts) => probe(ctx, out, id, sql, params, opts);
    {
      // The key-value API keeps its data in a hidden _cf_ table; create it so that the
      // reserved-name probes below hit an existing table.
      const rec = { id: "kv-put", action: "await ctx.storage.put('k', 'v') (creates the hidden key-value table)" };
      try {
        await ctx.storage.put("k", "v");
        rec.ok = true;
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    p("reserved-name", "SELECT name FROM pragma_table_list ORDER BY name");

    p("attach", "ATTACH DATABASE ':memory:' AS x");
    p("attach", "ATTACH ':memory:' AS x");
    p("attach", "ATTACH DATABASE 'file.db' AS x");
    p("detach", "DETACH x");
    p("detach", "DETACH DATABASE x");
    p("vacuum", "VACUUM");
    p("vacuum", "VACUUM main");
    p("vacuum", "VACUUM INTO 'x.db'");
    p("analyze", "ANALYZE");
    p("reindex", "REINDEX");

    p("fn", "SELECT sqlite_version()");
    p("fn", "SELECT sqlite_source_id()");
    p("fn", "SELECT sqlite_compileoption_used('ENABLE_FTS5')");
    p("fn", "SELECT sqlite_compileoption_get(0)");
    p("fn", "SELECT length(randomblob(16)) AS n, typeof(randomblob(16)) AS t");
    p("fn", "SELECT randomblob(16) AS b", [], { types: true, maxRows: 0 });
    p("fn", "SELECT length(hex(randomblob(16))) AS n");
    p("fn", "SELECT changes()");
    p("fn", "SELECT total_changes() >= 0 AS ok");
    p("fn", "SELECT last_insert_rowid()");
    p("fn", "SELECT load_extension('x')");
    p("fn", "SELECT typeof(random()) AS t");
    p("fn", "SELECT unixepoch() > 1700000000 AS ok");
    p("fn", "SELECT typeof(current_timestamp) AS t");
    p("fn", "SELECT julianday('2000-01-01') AS j");
    p("fn", "SELECT iif(1, 'a', 'b') AS v");
    p("fn", "SELECT format('%d-%s', 1, 'x') AS v");
    p("fn", "SELECT unhex('4142') AS v", [], { types: true });
    p("fn", "SELECT concat_ws(',', 1, 2) AS v");
    p("fn", "SELECT sqrt(16) AS v, pow(2, 10) AS w, ln(1) AS x");
    p("fn", "SELECT soundex('Robert') AS v");
    p("fn", "SELECT like('a%', 'abc') AS v");
    p("fn", "SELECT printf('%.2f', 3.14159) AS v");
    p("fn", "SELECT zeroblob(4) AS v", [], { types: true });
    p("fn", "SELECT timediff('2020-01-02', '2020-01-01') AS v");
    p("fn", "SELECT string_agg(x, ',') AS v FROM (SELECT 'a' AS x UNION ALL SELECT 'b')");
    p("fn", "SELECT * FROM generate_series(1, 3)");
    p("fn", "SELECT median(1)");
    p("fn", "SELECT percentile(1, 50)");
    p("fn", "SELECT sha3('a')");
    p("fn", "SELECT decimal('1.5')");
    p("fn", "SELECT regexp('a', 'a')");
    p("fn", "SELECT 'a' REGEXP 'a'");
    p("fn", "SELECT unistr('\\u0041') AS v");
    p("fn", "SELECT likely(1), unlikely(1), likelihood(1, 0.5)");
    p("fn", "SELECT nosuchfunction(1)");

    p("reserved-name", "CREATE TABLE _cf_x(a)");
    p("reserved-name", 'CREATE TABLE "_CF_y"(a)');
    p("reserved-name", "CREATE TABLE _Cf_z(a)");
    p("reserved-name", "CREATE TABLE _cfz(a)");
    p("reserved-name", "CREATE TABLE _cf(a)");
    p("reserved-name", "CREATE TABLE sqlite_x(a)");
    p("reserved-name", "CREATE TABLE SQLITE_y(a)");
    p("reserved-name", "CREATE TABLE rn_ok(a)");
    p("reserved-name", "CREATE INDEX _cf_idx ON rn_ok(a)");
    p("reserved-name", "CREATE INDEX sqlite_idx ON rn_ok(a)");
    p("reserved-name", "CREATE VIEW _cf_v AS SELECT 1");
    p("reserved-name", "CREATE TRIGGER _cf_tr AFTER INSERT ON rn_ok BEGIN SELECT 1; END");
    p("reserved-name", "CREATE TABLE rn_t(_cf_col)");
    p("reserved-name", "ALTER TABLE rn_ok RENAME TO _cf_renamed");
    p("reserved-name", "ALTER TABLE rn_ok RENAME TO sqlite_renamed");
    p("reserved-name", "ALTER TABLE rn_ok RENAME TO rn_ok2");
    p("reserved-name", "SELECT * FROM _cf_KV");
    p("reserved-name", "SELECT * FROM _cf_METADATA");
    p("reserved-name", "INSERT INTO _cf_KV(key, value) VALUES ('k', 'v')");
    p("reserved-name", "DROP TABLE _cf_KV");
    p("reserved-name", "SELECT type, name, tbl_name FROM sqlite_master ORDER BY name");
    p("reserved-name", "SELECT type, name FROM sqlite_schema WHERE name LIKE '\\_cf%' ESCAPE '\\'");
    p("reserved-name", "SELECT name FROM sqlite_temp_master");
    p("reserved-name", "UPDATE sqlite_master SET sql = sql");

    p("temp", "CREATE TEMP TABLE t2(a)");
    p("temp", "CREATE TEMPORARY TABLE t3(a)");
    p("temp", "CREATE TABLE temp.t4(a)");
    p("temp", "CREATE TEMP VIEW tv AS SELECT 1");

    p("vtab", "CREATE VIRTUAL TABLE v USING fts5(a)");
    p("vtab", "INSERT INTO v(a) VALUES ('hello world')");
    p("vtab", "SELECT a, bm25(v) < 1 AS r FROM v WHERE v MATCH 'hello'");
    p("vtab", "SELECT highlight(v, 0, '[', ']') AS h FROM v WHERE v MATCH 'world'");
    p("vtab", "CREATE VIRTUAL TABLE vv USING fts5vocab(v, row)");
    p("vtab", "CREATE VIRTUAL TABLE r USING rtree(id, x0, x1)");
    p("vtab", "CREATE VIRTUAL TABLE v4 USING fts4(a)");
    p("vtab", "CREATE VIRTUAL TABLE v3 USING fts3(a)");
    p("vtab", "CREATE VIRTUAL TABLE s USING dbstat");
    p("vtab", "SELECT * FROM dbstat");
    p("vtab", "SELECT * FROM sqlite_dbpage");
    p("vtab", "SELECT key, value FROM json_each('[1,2]')");
    p("vtab", "SELECT count(*) AS n FROM json_tree('{\"a\":[1,2]}')");

    p("strict", "CREATE TABLE st(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, s TEXT) STRICT");
    p("strict", "INSERT INTO st(n, s) VALUES (1, 'a')");
    p("strict", "INSERT INTO st(n, s) VALUES ('abc', 'a')");
    p("strict", "INSERT INTO st(n, s) VALUES (1.5, 'a')");
    p("strict", "INSERT INTO st(n, s) VALUES (?, 'a')", [2]);
    p("strict", "INSERT INTO st(n, s) VALUES (?, 'a')", [2.5]);
    p("strict", "CREATE TABLE st2(a FOO) STRICT");
    p("without-rowid", "CREATE TABLE wr(k TEXT PRIMARY KEY, v) WITHOUT ROWID");
    p("generated", "CREATE TABLE gc(a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) STORED, c AS (a + 1))");
    p("generated", "INSERT INTO gc(a) VALUES (3) RETURNING a, b, c");

    p("returning", "CREATE TABLE rt(id INTEGER PRIMARY KEY, v TEXT)");
    p("returning", "INSERT INTO rt(v) VALUES ('a'), ('b') RETURNING id, v");
    p("returning", "UPDATE rt SET v = v || '!' WHERE id = 1 RETURNING *");
    p("returning", "DELETE FROM rt WHERE id = 2 RETURNING id");
    p("returning", "INSERT INTO rt(id, v) VALUES (1, 'z') ON CONFLICT(id) DO UPDATE SET v = excluded.v RETURNING id, v");
    p("returning", "INSERT INTO rt(id, v) VALUES (1, 'q') ON CONFLICT DO NOTHING RETURNING id");
    p("changes", "INSERT INTO rt(id, v) VALUES (10, 'a'), (11, 'b')");
    p("changes", "SELECT changes() AS c, last_insert_rowid() AS r, total_changes() > 0 AS t");
    p("upsert", "INSERT INTO rt(id, v) VALUES (5, 'x') ON CONFLICT(id) DO UPDATE SET v = excluded.v");
    p("upsert", "INSERT INTO rt(id, v) VALUES (5, 'y') ON CONFLICT(id) DO UPDATE SET v = excluded.v");
    p("upsert", "SELECT v FROM rt WHERE id = 5");
    p("upsert", "INSERT OR REPLACE INTO rt(id, v) VALUES (5, 'r')");
    p("upsert", "REPLACE INTO rt(id, v) VALUES (5, 's')");

    p("json", "SELECT json_extract('{\"a\":{\"b\":[1,2,3]}}', '$.a.b[1]') AS v");
    p("json", "SELECT '{\"a\":1}' ->> '$.a' AS v, '{\"a\":1}' -> '$.a' AS w");
    p("json", "SELECT json_object('a', 1, 'b', json_array(1, 2)) AS v");
    p("json", "SELECT typeof(jsonb('{}')) AS v");
    p("json", "SELECT json_group_array(x) AS v FROM (SELECT 1 AS x UNION ALL SELECT 2)");

    p("cte", "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT group_concat(n) AS v FROM c");
    p("cte", "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10000) SELECT count(*) AS v FROM c");
    p("window", "SELECT x, row_number() OVER (ORDER BY x DESC) AS rn, sum(x) OVER () AS total, lag(x) OVER (ORDER BY x) AS prev FROM (SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3)");
    p("window", "SELECT x, ntile(2) OVER w AS t FROM (SELECT 1 AS x UNION ALL SELECT 2) WINDOW w AS (ORDER BY x)");

    p("update-limit", "CREATE TABLE ul(a)");
    p("update-limit", "INSERT INTO ul(a) VALUES (1), (2), (3)");
    p("update-limit", "UPDATE ul SET a = a + 10 LIMIT 1");
    p("update-limit", "UPDATE ul SET a = a + 10 ORDER BY a LIMIT 1");
    p("update-limit", "DELETE FROM ul LIMIT 1");
    p("update-from", "UPDATE ul SET a = s.v FROM (SELECT 7 AS v) AS s WHERE ul.a = 1");

    p("ddl", "CREATE TABLE ddl(a INTEGER, b TEXT DEFAULT 'x' COLLATE NOCASE, CHECK (a >= 0))");
    p("ddl", "ALTER TABLE ddl ADD COLUMN c REAL");
    p("ddl", "ALTER TABLE ddl RENAME COLUMN c TO d");
    p("ddl", "ALTER TABLE ddl DROP COLUMN d");
    p("ddl", "CREATE VIEW ddl_v AS SELECT a FROM ddl");
    p("ddl", "CREATE TRIGGER ddl_tr AFTER INSERT ON ddl BEGIN UPDATE ddl SET b = 'trig' WHERE rowid = new.rowid; END");
    p("ddl", "INSERT INTO ddl(a) VALUES (1)");
    p("ddl", "SELECT a, b FROM ddl_v JOIN ddl USING (a)");
    p("ddl", "CREATE INDEX ddl_partial ON ddl(a) WHERE a > 0");
    p("ddl", "CREATE INDEX ddl_expr ON ddl(lower(b))");
    p("ddl", "CREATE TABLE ddl_as AS SELECT * FROM ddl");
    p("ddl", "DROP VIEW ddl_v");
    p("ddl", "DROP TABLE ddl");
    p("ddl", "CREATE TABLE IF NOT EXISTS ddl2(a)");
    p("ddl", "DROP TABLE IF EXISTS nothing_here");
    p("explain", "EXPLAIN SELECT 1");
    p("explain", "EXPLAIN QUERY PLAN SELECT 1");
    p("misc", "SELECT 1 AS a, 'x' AS b, NULL AS c, 1.5 AS d, x'00ff' AS e", [], { types: true });
    p("misc", "SELECT * FROM (VALUES (1, 2), (3, 4))");
    p("misc", "SELECT 'a' LIKE 'A' AS ci, 'a' GLOB 'A' AS cs");
    p("misc", "SELECT 1 IS TRUE AS v, NULL IS NOT DISTINCT FROM NULL AS w");
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: limits
  // -------------------------------------------------------------------------------------------
  function padStatement(nBytes) {
    // "SELECT 1 AS v /* " + padding + " */" with exactly nBytes ASCII bytes.
    const head = "SELECT 1 AS v /* ";
    const tail = " */";
    return head + "x".repeat(nBytes - head.length - tail.length) + tail;
  }

  function groupLimits(ctx) {
    const out = [];
    const p = (id, sql, params, opts) => probe(ctx, out, id, sql, params, opts);
    const qs = (n) => Array.from({ length: n }, () => "?").join(", ");
    const vals = (n) => Array.from({ length: n }, (_, i) => i);

    // Bound parameters.
    for (const n of [99, 100, 101, 200]) {
      const rec = exec(ctx, `SELECT 0 IN (${qs(n)}) AS v`, vals(n));
      delete rec.params;
      out.push({ id: "params-anonymous", count: n, ...rec });
    }
    for (const n of [100, 101, 999, 1000]) {
      const rec = exec(ctx, `SELECT ?${n} AS v`, vals(n));
      delete rec.params;
      out.push({ id: "params-numbered", number: n, bindings: n, ...rec });
    }
    p("params-numbered", "SELECT ?1, ?1 AS again", [7]);
    p("params-numbered", "SELECT ?0");
    p("params-named", "SELECT :a AS a, @b AS b, $c AS c", [1, 2, 3]);
    p("params-named", "SELECT :a AS a, :a AS again", [1]);
    p("params-mismatch", "SELECT ? AS v", []);
    p("params-mismatch", "SELECT ? AS v", [1, 2]);
    p("params-mismatch", "SELECT 1 AS v", [1]);

    // Statement length.
    for (const n of [99000, 99999, 100000, 100001, 100002, 101376]) {
      out.push({ id: "stmt-length", bytes: n, ...exec(ctx, padStatement(n)) });
    }
    {
      // Bisect the longest accepted statement.
      const okAt = (n) => exec(ctx, padStatement(n)).ok;
      let lo = 1000; // assumed accepted
      let hi = 200000; // assumed rejected
      const loOk = okAt(lo);
      const hiOk = okAt(hi);
      while (loOk && !hiOk && hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (okAt(mid)) lo = mid;
        else hi = mid;
      }
      out.push({
        id: "stmt-length-bisect",
        action: "largest accepted byte length of 'SELECT 1 AS v /* xxx... */'",
        ok: loOk && !hiOk,
        result: { maxAcceptedBytes: lo, minRejectedBytes: hi },
      });
    }
    {
      // Bytes or UTF-16 units? 'é' is 2 UTF-8 bytes and 1 UTF-16 unit.
      const head = "SELECT 1 AS v /* ";
      const tail = " */";
      const chars = 50000; // 100,000 bytes of padding, ~50,015 UTF-16 units in total
      const sql = head + "é".repeat(chars) + tail;
      out.push({ id: "stmt-length-utf8", note: "2-byte characters in a comment", ...exec(ctx, sql) });
      const sql2 = head + "é".repeat(49900) + tail;
      out.push({ id: "stmt-length-utf8", note: "2-byte characters in a comment", ...exec(ctx, sql2) });
    }
    {
      // Does the limit apply to the whole exec() string or per statement?
      const a = padStatement(60000);
      const sql = `${a}; ${a}`;
      out.push({ id: "stmt-length-multi", note: "two 60,000-byte statements in one exec()", ...exec(ctx, sql) });
    }

    // Value sizes.
    setup(ctx, out, "CREATE TABLE big(id INTEGER PRIMARY KEY, b BLOB)");
    setup(ctx, out, "CREATE TABLE big2(id INTEGER PRIMARY KEY, b1 BLOB, b2 BLOB)");
    const clear = (t) => {
      try {
        ctx.storage.sql.exec(`DELETE FROM ${t}`);
      } catch {}
    };
    // kind: "blob" | "text" | "text2" (2-byte UTF-8 characters); n is the byte size.
    const makeValue = (kind, n) => {
      if (kind === "blob") return new Uint8Array(n);
      if (kind === "text") return "a".repeat(n);
      return "\u00e9".repeat(Math.floor(n / 2)) + (n % 2 ? "a" : "");
    };
    const tryInsert = (kind, n, withReadBack) => {
      const rec = exec(ctx, "INSERT INTO big(b) VALUES (?)", [makeValue(kind, n)]);
      delete rec.params;
      if (rec.ok && withReadBack) {
        try {
          rec.storedLength = one(ctx, "SELECT length(CAST(b AS BLOB)) AS n FROM big ORDER BY id DESC LIMIT 1").n;
        } catch (e) {
          rec.readBackError = errInfo(e);
        }
      }
      clear("big");
      return rec;
    };
    const trySelect = (kind, n) => {
      const rec = exec(ctx, "SELECT length(CAST(? AS BLOB)) AS n", [makeValue(kind, n)]);
      delete rec.params;
      return rec;
    };
    const tryTwo = (n) => {
      const rec = exec(ctx, "INSERT INTO big2(b1, b2) VALUES (?, ?)", [new Uint8Array(n), new Uint8Array(n)]);
      delete rec.params;
      clear("big2");
      return rec;
    };
    const bisect = (lo, hi, okAt) => {
      const loOk = okAt(lo);
      const hiOk = okAt(hi);
      if (!loOk || hiOk) return { ok: false, result: { loOk, hiOk, lo, hi } };
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (okAt(mid)) lo = mid;
        else hi = mid;
      }
      return { ok: true, result: { maxAcceptedBytes: lo, minRejectedBytes: hi } };
    };
    const sizes = [1048576, 2000000, 2097152, 2100000, 2199994, 2199995, 2200000, 2200001, 4194304, 5000000];
    for (const n of sizes) out.push({ id: "value-size-insert-blob", bytes: n, ...tryInsert("blob", n, true) });
    for (const n of sizes) out.push({ id: "value-size-insert-text", bytes: n, ...tryInsert("text", n, true) });
    for (const n of [2199994, 2199995]) out.push({ id: "value-size-insert-text-2byte-chars", bytes: n, ...tryInsert("text2", n, true) });
    for (const n of [2200000, 2200001]) out.push({ id: "value-size-bind-only-blob", bytes: n, sql: "SELECT length(CAST(? AS BLOB)) AS n", ...trySelect("blob", n) });
    for (const n of [2200000, 2200001]) out.push({ id: "value-size-bind-only-text", bytes: n, sql: "SELECT length(CAST(? AS BLOB)) AS n", ...trySelect("text", n) });
    out.push({
      id: "value-size-bisect-insert-blob",
      action: "largest Uint8Array accepted by INSERT INTO big(b) VALUES (?) (table big(id INTEGER PRIMARY KEY, b BLOB))",
      ...bisect(1000000, 5000000, (n) => tryInsert("blob", n, false).ok),
    });
    out.push({
      id: "value-size-bisect-insert-text",
      action: "largest ASCII string accepted by INSERT INTO big(b) VALUES (?)",
      ...bisect(1000000, 5000000, (n) => tryInsert("text", n, false).ok),
    });
    out.push({
      id: "value-size-bisect-bind-only-blob",
      action: "largest Uint8Array accepted by SELECT length(CAST(? AS BLOB))",
      ...bisect(1000000, 5000000, (n) => trySelect("blob", n).ok),
    });
    out.push({
      id: "value-size-bisect-two-columns",
      action: "largest n for which INSERT INTO big2(b1, b2) VALUES (?, ?) with two n-byte Uint8Arrays is accepted",
      ...bisect(500000, 2500000, (n) => tryTwo(n).ok),
    });
    for (const n of [1048576, 1099990, 1099991, 2000000, 2097152]) {
      out.push({ id: "row-size-two-blobs", bytesEach: n, sql: "INSERT INTO big2(b1, b2) VALUES (?, ?)", ...tryTwo(n) });
    }
    for (const n of [2200000, 2200001]) {
      p("value-size-sql-zeroblob", `SELECT length(zeroblob(${n})) AS n`);
    }
    for (const n of [2199994, 2199995]) {
      p("value-size-sql-zeroblob-insert", `INSERT INTO big(b) VALUES (zeroblob(${n}))`);
      clear("big");
    }
    p("value-size-sql-concat", "SELECT length(CAST(b || b AS BLOB)) AS n FROM (SELECT randomblob(1100000) AS b)");
    p("value-size-sql-concat", "SELECT length(CAST(b || b || 'x' AS BLOB)) AS n FROM (SELECT randomblob(1100000) AS b)");
    {
      // Grow one column of an existing row past the row limit with UPDATE.
      setup(ctx, out, "INSERT INTO big2(id, b1, b2) VALUES (1, zeroblob(1000000), zeroblob(1000000))");
      p("row-size-update", "UPDATE big2 SET b2 = zeroblob(1300000) WHERE id = 1");
      p("row-size-update", "SELECT length(b1) AS l1, length(b2) AS l2 FROM big2 WHERE id = 1");
      clear("big2");
    }

    // Other SQLite limits.
    const compound = (n) => Array.from({ length: n }, (_, i) => `SELECT ${i}`).join(" UNION ALL ");
    for (const n of [5, 6]) out.push({ id: "compound-select", terms: n, ...exec(ctx, compound(n)) });
    out.push({ id: "compound-select-values", rows: 50, ...exec(ctx, `SELECT count(*) AS n FROM (VALUES ${Array.from({ length: 50 }, (_, i) => `(${i})`).join(", ")})`) });
    for (const n of [50, 51]) {
      out.push({ id: "like-pattern", patternLength: n, ...exec(ctx, `SELECT 'a' LIKE '${"%".repeat(n)}' AS v`) });
    }
    for (const n of [100, 101]) {
      const cols = Array.from({ length: n }, (_, i) => `c${i}`).join(", ");
      out.push({ id: "columns-create", columns: n, ...exec(ctx, `CREATE TABLE cols_${n}(${cols})`) });
      const sel = Array.from({ length: n }, (_, i) => `${i} AS c${i}`).join(", ");
      const r = exec(ctx, `SELECT ${sel}`);
      delete r.rows;
      delete r.columnNames;
      out.push({ id: "columns-select", columns: n, ...r });
    }
    for (const n of [127, 128]) {
      out.push({ id: "function-args", args: n, ...exec(ctx, `SELECT length(json_array(${Array.from({ length: n }, () => "1").join(",")})) AS v`) });
    }
    for (const n of [99, 100, 101]) {
      // n terms joined by "+" build a left-deep tree n levels deep.
      const sum = Array.from({ length: n }, () => "1").join("+");
      out.push({ id: "expr-depth", terms: n, ...exec(ctx, `SELECT ${sum} AS v`) });
    }
    for (const n of [100, 101]) {
      out.push({ id: "expr-depth-parens", parens: n, ...exec(ctx, `SELECT ${"(".repeat(n)}1${")".repeat(n)} AS v`) });
    }
    for (const n of [5000, 8000, 12000, 30000]) {
      const list = Array.from({ length: n }, (_, i) => String(i % 10)).join(",");
      out.push({ id: "vdbe-ops", note: `IN list of ${n} constants`, ...exec(ctx, `SELECT 1 IN (${list}) AS v`) });
    }
    {
      setup(ctx, out, "PRAGMA recursive_triggers = ON");
      for (const [t, start] of [["td_a", 41], ["td_b", 40], ["td_c", 39]]) {
        setup(ctx, out, `CREATE TABLE ${t}(n INTEGER)`);
        setup(ctx, out, `CREATE TRIGGER ${t}_tr AFTER INSERT ON ${t} WHEN new.n < 50 BEGIN INSERT INTO ${t}(n) VALUES (new.n + 1); END`);
        out.push({ id: "trigger-depth", recursionLevels: 50 - start, ...exec(ctx, `INSERT INTO ${t}(n) VALUES (${start})`) });
        p("trigger-depth.rows-left", `SELECT count(*) AS n FROM ${t}`);
      }
      setup(ctx, out, "PRAGMA recursive_triggers = OFF");
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: values crossing the JS <-> SQLite boundary
  // -------------------------------------------------------------------------------------------
  function groupValues(ctx) {
    const out = [];
    const p = (id, sql, params, opts) => probe(ctx, out, id, sql, params, { types: true, ...opts });
    setup(ctx, out, "CREATE TABLE vi(id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC, x)");

    // Large integers written as SQL literals, read back as number and as exact text.
    for (const lit of ["9007199254740991", "9007199254740992", "9007199254740993", "9223372036854775807", "-9007199254740993"]) {
      p("int-literal", `SELECT ${lit} AS v, CAST(${lit} AS TEXT) AS exact, typeof(${lit}) AS t`);
    }
    setup(ctx, out, "INSERT INTO vi(id, i) VALUES (1, 9007199254740993)");
    p("int-stored", "SELECT i, CAST(i AS TEXT) AS exact, typeof(i) AS t FROM vi WHERE id = 1");
    p("int-stored", "SELECT i = 9007199254740993 AS eq_exact, i = ? AS eq_param FROM vi WHERE id = 1", [9007199254740992]);

    // JS numbers as parameters.
    const numbers = [
      ["2^53-1", 9007199254740991],
      ["2^53", 9007199254740992],
      ["2^53+1 (not representable, becomes 2^53)", 9007199254740993],
      ["1", 1],
      ["1.5", 1.5],
      ["-0", -0],
      ["NaN", NaN],
      ["Infinity", Infinity],
      ["-Infinity", -Infinity],
      ["1e300", 1e300],
    ];
    for (const [label, v] of numbers) {
      out.push({
        id: "number-param",
        label,
        ...exec(ctx, "SELECT ? AS v, typeof(?) AS t, quote(?) AS q", [v, v, v], { types: true }),
      });
    }
    numbers.forEach(([label, v], idx) => {
      const id = 100 + idx;
      const w = exec(ctx, "INSERT INTO vi(id, i, r, x) VALUES (?, ?, ?, ?)", [id, v, v, v]);
      const r = exec(ctx, "SELECT i, typeof(i) AS ti, r, typeof(r) AS tr, x, typeof(x) AS tx, CAST(i AS TEXT) AS i_text FROM vi WHERE id = ?", [id], { types: true });
      out.push({ id: "number-column", label, ok: w.ok && r.ok, write: w, read: r });
    });

    // Other JS types as parameters.
    const others = [
      ["bigint 1n", () => 1n],
      ["bigint 2^63-1", () => 9223372036854775807n],
      ["true", () => true],
      ["false", () => false],
      ["null", () => null],
      ["undefined", () => undefined],
      ["string", () => "héllo"],
      ["empty string", () => ""],
      ["string with NUL", () => "a\u0000b"],
      ["lone surrogate", () => "a\uD800b"],
      ["Uint8Array", () => new Uint8Array([1, 2, 3])],
      ["ArrayBuffer", () => new Uint8Array([4, 5, 6]).buffer],
      ["empty Uint8Array", () => new Uint8Array(0)],
      ["Int32Array", () => new Int32Array([1])],
      ["DataView", () => new DataView(new Uint8Array([7, 8]).buffer)],
      ["subarray view", () => new Uint8Array([9, 10, 11, 12]).subarray(1, 3)],
      ["Date", () => new Date(0)],
      ["plain object", () => ({ a: 1 })],
      ["array", () => [1, 2]],
      ["Symbol", () => Symbol("s")],
      ["function", () => function f() {}],
      ["Number object", () => new Number(5)],
      ["String object", () => new String("s")],
    ];
    for (const [label, mk] of others) {
      let v;
      try {
        v = mk();
      } catch (e) {
        out.push({ id: "other-param", label, ok: false, error: errInfo(e) });
        continue;
      }
      out.push({
        id: "other-param",
        label,
        ...exec(ctx, "SELECT ? AS v, typeof(?) AS t, quote(?) AS q", [v, v, v], { types: true }),
      });
    }
    p("other-param-missing", "SELECT ? AS v", [undefined]);

    // What comes back from each storage class.
    setup(ctx, out, "INSERT INTO vi(id, i, r, t, b, n, x) VALUES (2, 7, 2.0, 'txt', x'0102', 1.0, 2.5)");
    p("read-types", "SELECT i, r, t, b, n, x, typeof(r) AS tr, typeof(n) AS tn FROM vi WHERE id = 2");
    p("read-types", "SELECT 2.0 AS v, typeof(2.0) AS t");
    p("read-types", "SELECT -0.0 AS v, typeof(-0.0) AS t");
    p("read-types", "SELECT 0.0 * -1 AS v");
    p("read-types", "SELECT 1e999 AS v, -1e999 AS w");
    p("read-types", "SELECT x'' AS v, typeof(x'') AS t");
    p("read-types", "SELECT zeroblob(0) AS v");
    p("read-types", "SELECT CAST('abc' AS BLOB) AS v");
    p("read-types", "SELECT CAST(x'e282ac' AS TEXT) AS v");
    p("read-types", "SELECT CAST(x'ff' AS TEXT) AS v");
    p("read-types", "SELECT char(0x1F600) AS v, length(char(0x1F600)) AS l");
    {
      // Identity: is a blob returned twice the same ArrayBuffer? Is it a copy?
      action(out, "blob-identity", "read the same BLOB twice, mutate the first result", () => {
        const a = one(ctx, "SELECT b FROM vi WHERE id = 2").b;
        new Uint8Array(a)[0] = 0xee;
        const b = one(ctx, "SELECT b FROM vi WHERE id = 2").b;
        return { firstType: jsType(a), secondByte0: new Uint8Array(b)[0], same: a === b };
      });
      action(out, "param-blob-copy", "mutate a Uint8Array after binding it", () => {
        const u = new Uint8Array([1, 1]);
        ctx.storage.sql.exec("INSERT INTO vi(id, b) VALUES (3, ?)", u);
        u[0] = 9;
        return hex(new Uint8Array(one(ctx, "SELECT b FROM vi WHERE id = 3").b));
      });
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: cursor API
  // -------------------------------------------------------------------------------------------
  function groupCursor(ctx) {
    const out = [];
    const p = (id, sql, params, opts) => probe(ctx, out, id, sql, params, opts);
    setup(ctx, out, "CREATE TABLE cx(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c TEXT)");
    setup(ctx, out, "CREATE INDEX cx_a ON cx(a)");
    setup(ctx, out, "CREATE INDEX cx_b ON cx(b)");
    setup(ctx, out, "CREATE TABLE cy(id INTEGER PRIMARY KEY, a INTEGER)");

    p("rows-insert-indexed", "INSERT INTO cx(id, a, b, c) VALUES (1, 1, 'x', 'p')");
    p("rows-insert-indexed-multi", "INSERT INTO cx(id, a, b, c) VALUES (2, 2, 'y', 'p'), (3, 3, 'z', 'p'), (4, 4, 'w', 'p'), (5, 5, 'v', 'p')");
    p("rows-insert-plain", "INSERT INTO cy(id, a) VALUES (1, 1)");
    p("rows-update-indexed-cols", "UPDATE cx SET a = 10, b = 'xx' WHERE id = 1");
    p("rows-update-one-indexed-col", "UPDATE cx SET a = 11 WHERE id = 1");
    p("rows-update-unindexed-col", "UPDATE cx SET c = 'q' WHERE id = 1");
    p("rows-update-same-value", "UPDATE cx SET c = 'q' WHERE id = 1");
    p("rows-update-plain", "UPDATE cy SET a = 2 WHERE id = 1");
    p("rows-update-zero", "UPDATE cx SET a = 0 WHERE id = 999");
    p("rows-update-zero-scan", "UPDATE cx SET a = 0 WHERE c = 'nothing'");
    p("rows-delete-3", "DELETE FROM cx WHERE id IN (2, 3, 4)");
    p("rows-delete-1-indexed", "DELETE FROM cx WHERE id = 5");
    setup(ctx, out, "INSERT INTO cx(id, a, b, c) VALUES (5, 5, 'v', 'p')");
    setup(ctx, out, "INSERT INTO cy(id, a) VALUES (2, 1), (3, 1), (4, 1)");
    p("rows-delete-3-plain", "DELETE FROM cy WHERE id IN (2, 3, 4)");
    setup(ctx, out, "INSERT INTO cx(id, a, b, c) VALUES (2, 2, 'y', 'p'), (3, 3, 'z', 'p')");
    {
      const rec = { id: "rows-update-returning-2", sql: "UPDATE cx SET c = 'r' WHERE id IN (2, 3) RETURNING id, c" };
      try {
        const cur = ctx.storage.sql.exec(rec.sql);
        rec.beforeIterating = { rowsRead: cur.rowsRead, rowsWritten: cur.rowsWritten };
        const first = cur.next();
        rec.afterFirstNext = { rowsRead: cur.rowsRead, rowsWritten: cur.rowsWritten, value: enc(first.value), done: first.done };
        const rest = cur.toArray();
        rec.ok = true;
        rec.rest = enc(rest);
        rec.rowsRead = cur.rowsRead;
        rec.rowsWritten = cur.rowsWritten;
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    p("rows-update-returning-2-unconsumed.setup", "UPDATE cx SET c = 's' WHERE id IN (2, 3)");
    action(out, "rows-returning-never-iterated", "exec UPDATE ... RETURNING of 2 rows, never iterate, then read the rows", () => {
      const cur = ctx.storage.sql.exec("UPDATE cx SET c = 't' WHERE id IN (2, 3) RETURNING id");
      const counters = { rowsRead: cur.rowsRead, rowsWritten: cur.rowsWritten };
      const after = ctx.storage.sql.exec("SELECT id, c FROM cx WHERE id IN (2, 3) ORDER BY id").toArray();
      const rest = cur.toArray(); // finish the statement (an unfinished cursor blocks the commit)
      return { countersBeforeIterating: counters, rowsAfter: after, returnedLater: rest, countersAfter: { rowsRead: cur.rowsRead, rowsWritten: cur.rowsWritten } };
    });
    p("rows-select-scan", "SELECT * FROM cx");
    p("rows-select-pk", "SELECT * FROM cx WHERE id = 1");
    p("rows-select-index", "SELECT * FROM cx WHERE b = 'y'");
    p("rows-select-count", "SELECT count(*) AS n FROM cx");
    p("rows-select-limit", "SELECT * FROM cx LIMIT 1");
    p("rows-create-table", "CREATE TABLE cz(a)");
    p("rows-create-index", "CREATE INDEX cx_c ON cx(c)");
    p("rows-drop-table", "DROP TABLE cz");

    p("column-names", "SELECT id, a AS alias, 1 + 1, b || c, count(*) FROM cx GROUP BY id LIMIT 1");
    p("column-names", "INSERT INTO cy(a) VALUES (5)");
    p("column-names", "SELECT 1 AS dup, 2 AS dup");
    p("raw", "SELECT 1 AS dup, 2 AS dup", [], { raw: true });
    p("raw", "SELECT id, b FROM cx ORDER BY id", [], { raw: true });
    p("raw", "SELECT id FROM cx WHERE 0", [], { raw: true });

    action(out, "cursor-api", "methods and properties of a cursor", () => {
      const cur = ctx.storage.sql.exec("SELECT id FROM cx ORDER BY id");
      const proto = Object.getPrototypeOf(cur);
      const raw = cur.raw();
      const res = {
        constructor: cur.constructor && cur.constructor.name,
        ownProps: Object.getOwnPropertyNames(cur),
        protoProps: Object.getOwnPropertyNames(proto).sort(),
        iterable: typeof cur[Symbol.iterator] === "function",
        rawIterable: typeof raw[Symbol.iterator] === "function",
        rawConstructor: raw.constructor && raw.constructor.name,
      };
      raw.toArray();
      cur.toArray();
      return res;
    });
    action(out, "cursor-next", "next() protocol to exhaustion", () => {
      const cur = ctx.storage.sql.exec("SELECT id FROM cx WHERE id IN (1, 2) ORDER BY id");
      return [cur.next(), cur.next(), cur.next(), cur.next()].map(enc);
    });
    action(out, "cursor-toArray-twice", "toArray() twice on one cursor", () => {
      const cur = ctx.storage.sql.exec("SELECT id FROM cx WHERE id IN (1, 2) ORDER BY id");
      return { first: cur.toArray(), second: cur.toArray() };
    });
    action(out, "cursor-raw-after-next", "next() then raw().toArray()", () => {
      const cur = ctx.storage.sql.exec("SELECT id FROM cx WHERE id IN (1, 2, 3) ORDER BY id");
      const first = cur.next();
      return { first: enc(first), rest: cur.raw().toArray() };
    });
    for (const [label, sql] of [
      ["one row", "SELECT id FROM cx WHERE id = 1"],
      ["zero rows", "SELECT id FROM cx WHERE id = 999"],
      ["two rows", "SELECT id FROM cx WHERE id IN (1, 2)"],
      ["no result columns", "UPDATE cy SET a = a WHERE id = 1"],
    ]) {
      action(out, "cursor-one", `one() on ${label}: ${sql}`, () => enc(ctx.storage.sql.exec(sql).one()));
    }
    action(out, "cursor-for-of", "for..of over a cursor", () => {
      const ids = [];
      for (const r of ctx.storage.sql.exec("SELECT id FROM cx ORDER BY id")) ids.push(r.id);
      return ids;
    });
    action(out, "cursor-lazy-write", "exec INSERT and never touch the cursor: is the row written?", () => {
      ctx.storage.sql.exec("INSERT INTO cy(id, a) VALUES (77, 1)");
      return one(ctx, "SELECT count(*) AS n FROM cy WHERE id = 77").n;
    });
    action(out, "cursor-lazy-error", "exec of a statement whose error appears on a later row: does exec() or iteration throw?", () => {
      let cur;
      try {
        cur = ctx.storage.sql.exec("SELECT CASE WHEN id = 3 THEN json('bad') ELSE id END AS v FROM cx ORDER BY id");
      } catch (e) {
        return { threwAt: "exec", error: errInfo(e) };
      }
      const got = [];
      try {
        for (const r of cur) got.push(r.v);
      } catch (e) {
        return { threwAt: "iteration", rowsBefore: got, error: errInfo(e) };
      }
      return { threwAt: "nowhere", rows: got };
    });
    action(out, "cursor-interleaved", "two cursors over the same SQL string open at once", () => {
      const a = ctx.storage.sql.exec("SELECT id FROM cx ORDER BY id");
      const b = ctx.storage.sql.exec("SELECT id FROM cx ORDER BY id");
      const res = { a1: enc(a.next().value), b1: enc(b.next().value), a2: enc(a.next().value), b2: enc(b.next().value) };
      a.toArray();
      b.toArray();
      return res;
    });

    // Multi-statement strings.
    p("multi", "SELECT 1; SELECT 2");
    p("multi", "SELECT 1 AS a; SELECT 2 AS b, 3 AS c");
    p("multi", "INSERT INTO cy(id, a) VALUES (10, 1); INSERT INTO cy(id, a) VALUES (11, 1)");
    p("multi", "INSERT INTO cy(id, a) VALUES (12, 1); SELECT count(*) AS n FROM cy WHERE id >= 10");
    p("multi", "SELECT 1;");
    p("multi", "SELECT 1;   ");
    p("multi", "SELECT 1;\n");
    p("multi", "SELECT 1;\t");
    p("multi", "SELECT 1;\r\n");
    p("multi", "SELECT 1; -- trailing comment");
    p("multi", "SELECT 1; /* trailing comment */");
    p("multi", "SELECT 1;;");
    p("multi", "");
    p("multi", "   ");
    p("multi", "-- only a comment");
    p("multi", ";");
    p("multi", "SELECT ?; SELECT ?", [1]);
    p("multi", "SELECT ?; SELECT ?", [1, 2]);
    p("multi", "SELECT 1; SELECT ? AS v", [5]);
    p("multi-error", "INSERT INTO cy(id, a) VALUES (20, 1); INSERT INTO nosuch VALUES (1)");
    p("multi-error.check", "SELECT count(*) AS n FROM cy WHERE id = 20");
    p("multi-error", "INSERT INTO cy(id, a) VALUES (21, 1); INSERT INTO cy(id, a) VALUES (21, 2)");
    p("multi-error.check", "SELECT count(*) AS n FROM cy WHERE id = 21");
    p("multi-error", "INSERT INTO cy(id, a) VALUES (22, 1); SELEC 1");
    p("multi-error.check", "SELECT count(*) AS n FROM cy WHERE id = 22");
    p("multi-rows", "INSERT INTO cy(id, a) VALUES (30, 1); UPDATE cy SET a = 9 WHERE id = 30");
    p("multi-rows", "SELECT * FROM cx; SELECT 1 AS v");

    // Statement-level atomicity of a failing multi-row insert.
    p("stmt-atomic", "INSERT INTO cy(id, a) VALUES (40, 1), (41, 1), (40, 2)");
    p("stmt-atomic.check", "SELECT count(*) AS n FROM cy WHERE id IN (40, 41)");
    p("insert-or-ignore", "INSERT OR IGNORE INTO cy(id, a) VALUES (1, 1), (42, 1)");
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: error messages
  // -------------------------------------------------------------------------------------------
  function groupErrors(ctx) {
    const out = [];
    const p = (id, sql, params, opts) => probe(ctx, out, id, sql, params, opts);
    p("fk-default", "PRAGMA foreign_keys");
    setup(ctx, out, "CREATE TABLE ep(id INTEGER PRIMARY KEY, u TEXT UNIQUE, nn TEXT NOT NULL DEFAULT 'd', c INTEGER CHECK (c > 0), c2 INTEGER CONSTRAINT c2_positive CHECK (c2 > 0))");
    setup(ctx, out, "CREATE TABLE ec(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES ep(id))");
    setup(ctx, out, "CREATE TABLE ecd(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES ep(id) DEFERRABLE INITIALLY DEFERRED)");
    setup(ctx, out, "CREATE TABLE ek(a INTEGER, b INTEGER, PRIMARY KEY (a, b))");
    setup(ctx, out, "CREATE TABLE es(n INTEGER) STRICT");
    setup(ctx, out, "INSERT INTO ep(id, u, nn, c, c2) VALUES (1, 'a', 'x', 1, 1)");
    setup(ctx, out, "INSERT INTO ek(a, b) VALUES (1, 1)");

    p("unique", "INSERT INTO ep(id, u) VALUES (2, 'a')");
    p("primary-key", "INSERT INTO ep(id, u) VALUES (1, 'b')");
    p("primary-key-composite", "INSERT INTO ek(a, b) VALUES (1, 1)");
    p("unique-index", "CREATE UNIQUE INDEX ep_nn ON ep(nn)");
    setup(ctx, out, "INSERT INTO ep(id, u, nn) VALUES (3, 'c', 'unique-nn')");
    p("unique-index-violation", "CREATE UNIQUE INDEX ep_c2 ON ep(c2)");
    p("check", "INSERT INTO ep(id, u, c) VALUES (4, 'd', 0)");
    p("check-named", "INSERT INTO ep(id, u, c2) VALUES (5, 'e', 0)");
    p("not-null", "INSERT INTO ep(id, u, nn) VALUES (6, 'f', NULL)");
    p("not-null-param", "INSERT INTO ep(id, u, nn) VALUES (?, ?, ?)", [7, "g", null]);
    p("foreign-key", "INSERT INTO ec(id, pid) VALUES (1, 999)");
    p("foreign-key-delete-parent", "INSERT INTO ec(id, pid) VALUES (2, 1)");
    p("foreign-key-delete-parent", "DELETE FROM ep WHERE id = 1");
    p("strict-type", "INSERT INTO es(n) VALUES ('abc')");
    p("syntax", "SELEC 1");
    p("syntax", "SELECT * FROM");
    p("syntax", "SELECT 1 +");
    p("syntax", "CREATE TABLE (a)");
    p("syntax", "SELECT 'unterminated");
    p("missing-table", "SELECT * FROM no_such_table");
    p("missing-table", "INSERT INTO no_such_table VALUES (1)");
    p("missing-column", "SELECT no_such_column FROM ep");
    p("missing-column", "INSERT INTO ep(no_such_column) VALUES (1)");
    p("missing-column", "UPDATE ep SET no_such_column = 1");
    p("ambiguous-column", "SELECT id FROM ep, ec");
    p("table-exists", "CREATE TABLE ep(a)");
    p("index-exists", "CREATE INDEX ep_idx ON ep(u)");
    p("index-exists", "CREATE INDEX ep_idx ON ep(u)");
    p("wrong-values-count", "INSERT INTO ep(id, u) VALUES (1)");
    p("division", "SELECT 1/0 AS v, 1.0/0 AS w, 1%0 AS m, 5/2 AS i, 5.0/2 AS r, -7/2 AS n");
    p("overflow", "SELECT abs(-9223372036854775808)");
    p("overflow", "SELECT 9223372036854775807 + 1 AS v");
    p("overflow", "SELECT sum(x) FROM (SELECT 9223372036854775807 AS x UNION ALL SELECT 1)");
    p("json-error", "SELECT json('not json')");
    p("raise", "CREATE TRIGGER ep_raise BEFORE UPDATE ON ep WHEN new.u = 'boom' BEGIN SELECT RAISE(ABORT, 'custom abort message'); END");
    p("raise", "UPDATE ep SET u = 'boom' WHERE id = 1");
    p("raise-fail", "SELECT RAISE(FAIL, 'x')");
    p("datatype", "SELECT * FROM ep LIMIT 'a'");
    p("no-such-function", "SELECT frobnicate(1)");
    p("wrong-arg-count", "SELECT abs(1, 2)");
    p("collation", "SELECT 'a' COLLATE nosuch");
    p("blob-param-bad", "SELECT ? AS v", [{ a: 1 }]);
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: transactionSync and alarms
  // -------------------------------------------------------------------------------------------
  async function groupTxSync(ctx) {
    const out = [];
    const sql = ctx.storage.sql;
    const count = (t) => one(ctx, `SELECT count(*) AS n FROM ${t}`).n;
    const rows = (t) => sql.exec(`SELECT v FROM ${t} ORDER BY rowid`).toArray().map((r) => r.v);
    const mk = (t) => sql.exec(`CREATE TABLE ${t}(v TEXT)`);

    probe(ctx, out, "exec-outside-transaction", "SELECT 1 AS v");

    action(out, "nested-inner-throw", "outer writes A; inner writes B then throws (caught by outer); outer writes C", () => {
      mk("tx1");
      let innerCaught;
      ctx.storage.transactionSync(() => {
        sql.exec("INSERT INTO tx1 VALUES ('A')");
        try {
          ctx.storage.transactionSync(() => {
            sql.exec("INSERT INTO tx1 VALUES ('B')");
            throw new Error("inner");
          });
        } catch (e) {
          innerCaught = errInfo(e);
        }
        sql.exec("INSERT INTO tx1 VALUES ('C')");
      });
      return { innerCaught, rowsAfter: rows("tx1") };
    });
    action(out, "nested-outer-throw", "outer writes A; inner writes B and returns; outer throws", () => {
      mk("tx2");
      let caught;
      try {
        ctx.storage.transactionSync(() => {
          sql.exec("INSERT INTO tx2 VALUES ('A')");
          ctx.storage.transactionSync(() => {
            sql.exec("INSERT INTO tx2 VALUES ('B')");
          });
          throw new Error("outer");
        });
      } catch (e) {
        caught = errInfo(e);
      }
      return { caught, rowsAfter: rows("tx2") };
    });
    action(out, "nested-three-levels", "three levels; the middle one throws after the innermost returned", () => {
      mk("tx3");
      let caught;
      ctx.storage.transactionSync(() => {
        sql.exec("INSERT INTO tx3 VALUES ('L1')");
        try {
          ctx.storage.transactionSync(() => {
            sql.exec("INSERT INTO tx3 VALUES ('L2')");
            ctx.storage.transactionSync(() => {
              sql.exec("INSERT INTO tx3 VALUES ('L3')");
            });
            throw new Error("middle");
          });
        } catch (e) {
          caught = errInfo(e);
        }
      });
      return { caught, rowsAfter: rows("tx3") };
    });
    action(out, "throw-identity", "the error thrown inside transactionSync is the one caught outside", () => {
      const err = new TypeError("mine");
      err.extra = 42;
      try {
        ctx.storage.transactionSync(() => {
          throw err;
        });
      } catch (e) {
        return { same: e === err, name: e.name, message: e.message, extra: e.extra };
      }
      return "no throw";
    });
    for (const [label, mkv] of [
      ["string", () => "a string"],
      ["number", () => 42],
      ["undefined", () => undefined],
      ["null", () => null],
      ["plain object", () => ({ x: 1 })],
    ]) {
      action(out, "throw-non-error", `throw ${label} inside transactionSync after a write`, () => {
        const t = "txn_" + label.replace(/\W/g, "_");
        mk(t);
        const thrown = mkv();
        try {
          ctx.storage.transactionSync(() => {
            sql.exec(`INSERT INTO ${t} VALUES ('w')`);
            throw thrown;
          });
        } catch (e) {
          return {
            caughtType: typeof e,
            caught: enc(e),
            sameValue: Object.is(e, thrown),
            rowsAfter: count(t),
          };
        }
        return { threw: false, rowsAfter: count(t) };
      });
    }
    action(out, "return-value", "transactionSync returns the callback's value", () => {
      const o = { a: 1 };
      const r = ctx.storage.transactionSync(() => o);
      return { same: r === o, value: enc(r) };
    });
    {
      const rec = { id: "async-callback", action: "transactionSync(async () => { write; await 0; write })" };
      try {
        mk("tx_async");
        const r = ctx.storage.transactionSync(async () => {
          sql.exec("INSERT INTO tx_async VALUES ('before-await')");
          await null;
          sql.exec("INSERT INTO tx_async VALUES ('after-await')");
        });
        rec.ok = true;
        rec.returnedType = jsType(r);
        try {
          await r;
          rec.promiseSettled = "fulfilled";
        } catch (e) {
          rec.promiseSettled = "rejected";
          rec.promiseError = errInfo(e);
        }
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      try {
        rec.rowsAfter = rows("tx_async");
      } catch (e) {
        rec.rowsAfterError = errInfo(e);
      }
      out.push(rec);
    }
    action(out, "sql-error-caught-inside", "inside transactionSync: write A, a failing statement (caught), write B", () => {
      mk("tx_sqlerr");
      sql.exec("CREATE UNIQUE INDEX tx_sqlerr_u ON tx_sqlerr(v)");
      let inner;
      ctx.storage.transactionSync(() => {
        sql.exec("INSERT INTO tx_sqlerr VALUES ('A')");
        try {
          sql.exec("INSERT INTO tx_sqlerr VALUES ('A')");
        } catch (e) {
          inner = errInfo(e);
        }
        sql.exec("INSERT INTO tx_sqlerr VALUES ('B')");
      });
      return { inner, rowsAfter: rows("tx_sqlerr") };
    });
    action(out, "sql-error-uncaught-inside", "inside transactionSync: write A, then a failing statement propagates", () => {
      mk("tx_sqlerr2");
      let caught;
      try {
        ctx.storage.transactionSync(() => {
          sql.exec("INSERT INTO tx_sqlerr2 VALUES ('A')");
          sql.exec("INSERT INTO no_such_table VALUES (1)");
        });
      } catch (e) {
        caught = errInfo(e);
      }
      return { caught, rowsAfter: rows("tx_sqlerr2") };
    });
    action(out, "ddl-rollback", "CREATE TABLE inside a transactionSync that throws", () => {
      try {
        ctx.storage.transactionSync(() => {
          sql.exec("CREATE TABLE tx_ddl(a)");
          throw new Error("undo");
        });
      } catch {}
      return one(ctx, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'tx_ddl'").n;
    });
    action(out, "transactionSync-api", "shape of transactionSync", () => ({
      type: typeof ctx.storage.transactionSync,
      length: ctx.storage.transactionSync.length,
      noArgument: (() => {
        try {
          ctx.storage.transactionSync();
          return "ok";
        } catch (e) {
          return errInfo(e);
        }
      })(),
    }));

    // Alarms.
    const future = () => Date.now() + 3600_000;
    out.push({ id: "alarm-initial", action: "getAlarm() in a fresh object", ok: true, result: await ctx.storage.getAlarm() });
    {
      const rec = { id: "alarm-set-then-throw", action: "setAlarm(t) inside transactionSync, then throw; getAlarm() afterwards" };
      const t = future();
      let caught;
      try {
        ctx.storage.transactionSync(() => {
          ctx.storage.setAlarm(t);
          throw new Error("roll back the alarm");
        });
      } catch (e) {
        caught = errInfo(e);
      }
      try {
        const got = await ctx.storage.getAlarm();
        rec.ok = true;
        rec.result = { caught, alarmAfterIsNull: got === null, alarmKept: got === t };
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    {
      const rec = { id: "alarm-set-then-commit", action: "setAlarm(t) inside transactionSync that returns; getAlarm() afterwards" };
      const t = future();
      try {
        const inside = ctx.storage.transactionSync(() => {
          const r = ctx.storage.setAlarm(t);
          return { setAlarmReturned: jsType(r) };
        });
        const got = await ctx.storage.getAlarm();
        rec.ok = true;
        rec.result = { ...inside, alarmAfterType: jsType(got), alarmKept: got === t };
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    {
      const rec = { id: "alarm-delete-then-throw", action: "deleteAlarm() inside transactionSync that throws; getAlarm() afterwards" };
      let before;
      try {
        before = await ctx.storage.getAlarm();
        try {
          ctx.storage.transactionSync(() => {
            ctx.storage.deleteAlarm();
            throw new Error("undo delete");
          });
        } catch {}
        const got = await ctx.storage.getAlarm();
        rec.ok = true;
        rec.result = { beforeType: jsType(before), afterType: jsType(got), deleteUndone: got === before && before !== null };
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    {
      const rec = { id: "alarm-nested-inner-throw", action: "outer transactionSync; inner sets a new alarm and throws; getAlarm() afterwards" };
      try {
        const before = await ctx.storage.getAlarm();
        const t2 = future() + 12345;
        ctx.storage.transactionSync(() => {
          try {
            ctx.storage.transactionSync(() => {
              ctx.storage.setAlarm(t2);
              throw new Error("inner");
            });
          } catch {}
        });
        const got = await ctx.storage.getAlarm();
        rec.ok = true;
        rec.result = { keptPrevious: got === before, gotInnerValue: got === t2 };
      } catch (e) {
        rec.ok = false;
        rec.error = errInfo(e);
      }
      out.push(rec);
    }
    {
      const rec = { id: "alarm-types", action: "setAlarm with a Date, a past time and a non-integer" };
      const res = {};
      for (const [label, v] of [
        ["Date", new Date(future())],
        ["past", Date.now() - 1000],
        ["fraction", future() + 0.5],
        ["string", String(future())],
      ]) {
        try {
          await ctx.storage.setAlarm(v);
          const got = await ctx.storage.getAlarm();
          res[label] = { ok: true, getAlarmType: jsType(got), fractional: typeof got === "number" && !Number.isInteger(got) };
        } catch (e) {
          res[label] = { ok: false, error: errInfo(e) };
        }
        try {
          await ctx.storage.deleteAlarm();
        } catch {}
      }
      rec.ok = true;
      rec.result = res;
      out.push(rec);
    }
    try {
      await ctx.storage.deleteAlarm();
    } catch {}
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Group: clock
  // -------------------------------------------------------------------------------------------
  function groupClock() {
    const d0 = Date.now();
    const p0 = performance.now();
    let i = 0;
    let x = 0;
    // Stops once Date.now() moved 50 ms or after a fixed amount of work if it never moves.
    while (Date.now() - d0 < 50 && i < 300_000_000) {
      x = (x + i * 7) % 1000003;
      i++;
    }
    return [
      {
        id: "date-now-busy-loop",
        action: "busy loop until Date.now() advanced 50 ms (capped at 3e8 iterations)",
        ok: true,
        result: {
          dateNowDeltaMs: Date.now() - d0,
          performanceNowDeltaMs: performance.now() - p0,
          iterations: i,
          stoppedBy: i >= 300_000_000 ? "iteration cap" : "Date.now advanced",
          sink: x > -1,
        },
      },
    ];
  }

  // -------------------------------------------------------------------------------------------
  // Commit-time scenarios. Each runs as three requests to one fresh object: setup (committed),
  // the scenario, then a check of what survived. `self` is the Durable Object instance.
  // -------------------------------------------------------------------------------------------
  function commitSetup(ctx) {
    const out = [];
    setup(ctx, out, "CREATE TABLE cm(v TEXT)");
    setup(ctx, out, "CREATE TABLE cp(id INTEGER PRIMARY KEY)");
    setup(ctx, out, "CREATE TABLE cc(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES cp(id) DEFERRABLE INITIALLY DEFERRED)");
    setup(ctx, out, "CREATE TABLE ci(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES cp(id))");
    setup(ctx, out, "CREATE TABLE cl(id INTEGER PRIMARY KEY, v TEXT)");
    setup(ctx, out, "INSERT INTO cl(id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    setup(ctx, out, "INSERT INTO cm(v) VALUES ('setup')");
    out.push({ id: "setup", ok: true });
    return out;
  }

  function commitCheck(ctx, self) {
    const out = [];
    action(out, "check", "what survived the previous request", () => ({
      cm: ctx.storage.sql.exec("SELECT v FROM cm ORDER BY rowid").toArray().map((r) => r.v),
      cc: ctx.storage.sql.exec("SELECT id, pid FROM cc ORDER BY id").toArray(),
      ci: ctx.storage.sql.exec("SELECT id, pid FROM ci ORDER BY id").toArray(),
      cl: ctx.storage.sql.exec("SELECT id, v FROM cl ORDER BY id").toArray(),
      requestsSeenByThisInstance: self.requests,
      instanceKeptCursor: self.keep !== undefined,
    }));
    return out;
  }

  const COMMIT_SCENARIOS = {
    "fk-deferred-violation": {
      description: "INSERT into a DEFERRABLE INITIALLY DEFERRED child with a missing parent, outside transactionSync, then return normally",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        probe(ctx, out, "deferred-violation", "INSERT INTO cc(id, pid) VALUES (1, 999)");
        probe(ctx, out, "foreign-key-check-sees-it", "PRAGMA foreign_key_check");
        return out;
      },
    },
    "fk-deferred-violation-in-transactionSync": {
      description: "the same deferred violation inside transactionSync",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "transactionSync", "transactionSync(() => INSERT INTO cc(id, pid) VALUES (1, 999))", () => {
          ctx.storage.transactionSync(() => {
            ctx.storage.sql.exec("INSERT INTO cc(id, pid) VALUES (1, 999)");
          });
          return "returned";
        });
        return out;
      },
    },
    "fk-deferred-violation-in-transactionSync-repaired": {
      description: "deferred violation inside transactionSync (does transactionSync itself throw?), repaired afterwards so the request can commit",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "transactionSync", "transactionSync(() => INSERT INTO cc(id, pid) VALUES (1, 999))", () => {
          ctx.storage.transactionSync(() => {
            ctx.storage.sql.exec("INSERT INTO cc(id, pid) VALUES (1, 999)");
          });
          return "returned";
        });
        probe(ctx, out, "foreign-key-check-sees-it", "PRAGMA foreign_key_check");
        probe(ctx, out, "repair", "INSERT INTO cp(id) VALUES (999)");
        return out;
      },
    },
    "fk-deferred-violation-repaired": {
      description: "deferred violation repaired (parent inserted) before the request ends",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        probe(ctx, out, "deferred-violation", "INSERT INTO cc(id, pid) VALUES (1, 999)");
        probe(ctx, out, "repair", "INSERT INTO cp(id) VALUES (999)");
        return out;
      },
    },
    "fk-defer-pragma-violation": {
      description: "PRAGMA defer_foreign_keys = ON, then an INSERT violating an immediate FK",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        probe(ctx, out, "pragma", "PRAGMA defer_foreign_keys = ON");
        probe(ctx, out, "violation", "INSERT INTO ci(id, pid) VALUES (1, 999)");
        return out;
      },
    },
    "fk-immediate-violation": {
      description: "control: an immediate FK violation fails at the statement, the request goes on",
      run(ctx) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        probe(ctx, out, "violation", "INSERT INTO ci(id, pid) VALUES (1, 999)");
        return out;
      },
    },
    "cursor-left-open-after-next": {
      description: "write a row, then leave a SELECT cursor open after one next() (cursor kept referenced on the instance)",
      run(ctx, self) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "open-cursor", "self.keep = sql.exec('SELECT id FROM cl ORDER BY id'); self.keep.next()", () => {
          self.keep = ctx.storage.sql.exec("SELECT id FROM cl ORDER BY id");
          return enc(self.keep.next());
        });
        return out;
      },
    },
    "cursor-left-open-untouched": {
      description: "write a row, then exec a SELECT returning rows and never touch the cursor (kept referenced)",
      run(ctx, self) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "open-cursor", "self.keep = sql.exec('SELECT id FROM cl ORDER BY id')", () => {
          self.keep = ctx.storage.sql.exec("SELECT id FROM cl ORDER BY id");
        });
        return out;
      },
    },
    "cursor-left-open-returning": {
      description: "UPDATE ... RETURNING of 3 rows, cursor never iterated (kept referenced)",
      run(ctx, self) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "open-cursor", "self.keep = sql.exec(\"UPDATE cl SET v = 'updated' RETURNING id\")", () => {
          self.keep = ctx.storage.sql.exec("UPDATE cl SET v = 'updated' RETURNING id");
        });
        return out;
      },
    },
    "cursor-exhausted-by-next": {
      description: "control: a SELECT cursor read to the end with next(), kept referenced",
      run(ctx, self) {
        const out = [];
        probe(ctx, out, "write-marker", "INSERT INTO cm(v) VALUES ('scenario')");
        action(out, "open-cursor", "self.keep = sql.exec(...); next() until done", () => {
          self.keep = ctx.storage.sql.exec("SELECT id FROM cl ORDER BY id");
          let n = 0;
          while (!self.keep.next().done) n++;
          return n;
        });
        return out;
      },
    },
  };

  async function groupEnv(ctx) {
    return [
      {
        id: "env",
        ok: true,
        result: {
          userAgent: typeof navigator !== "undefined" ? navigator.userAgent : null,
          sqlApi: Object.getOwnPropertyNames(Object.getPrototypeOf(ctx.storage.sql)).sort(),
          databaseSizeType: typeof ctx.storage.sql.databaseSize,
          storageApi: Object.getOwnPropertyNames(Object.getPrototypeOf(ctx.storage)).sort(),
        },
      },
    ];
  }

  const GROUPS = {
    env: groupEnv,
    transactions: groupTransactions,
    pragmas: groupPragmas,
    features: groupFeatures,
    limits: groupLimits,
    values: groupValues,
    cursor: groupCursor,
    errors: groupErrors,
    txsync: groupTxSync,
    clock: groupClock,
  };

  class Tenant extends DurableObject {
    constructor(ctx, env) {
      super(ctx, env);
      this.requests = 0;
    }

    async fetch(request) {
      this.requests++;
      const [group, phase] = new URL(request.url).pathname.slice(1).split("/");
      let fn = GROUPS[group];
      const scenario = COMMIT_SCENARIOS[group];
      if (scenario) {
        if (phase === "setup") fn = commitSetup;
        else if (phase === "check") fn = commitCheck;
        else fn = scenario.run;
      }
      if (!fn) return new Response("unknown group " + group, { status: 404 });
      let body;
      try {
        body = { ok: true, probes: await fn(this.ctx, this) };
        if (scenario && phase === "run") body.description = scenario.description;
      } catch (e) {
        body = { ok: false, error: errInfo(e), stack: String(e && e.stack) };
      }
      return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
    }

    async alarm() {
      // Present so that setAlarm() is allowed; the probes never let an alarm come due.
    }
  }

  // GET /<group> runs a group in the object named after it; GET /<scenario>/<phase> runs one
  // phase of a commit-time scenario in the object named after the scenario.
  const worker = {
    async fetch(request, env) {
      const url = new URL(request.url);
      const [group, phase] = url.pathname.slice(1).split("/");
      const stub = env.TENANT.get(env.TENANT.idFromName("object-" + group));
      try {
        const res = await stub.fetch("http://do/" + group + "/" + (phase || "run"));
        const text = await res.text();
        try {
          return Response.json(JSON.parse(text));
        } catch {
          return Response.json({ ok: false, status: res.status, body: text.slice(0, 2000) });
        }
      } catch (e) {
        // The Durable Object call itself failed (for instance while committing).
        return Response.json({ ok: false, stubFetchThrew: errInfo(e) });
      }
    },
  };

  return { Tenant, worker, scenarios: Object.keys(COMMIT_SCENARIOS) };
}

// ---------------------------------------------------------------------------------------------
// Node side
// ---------------------------------------------------------------------------------------------
const WORKER_SOURCE = `import { DurableObject } from "cloudflare:workers";
const suite = (${buildSuite.toString()})(DurableObject);
export const Tenant = suite.Tenant;
export default suite.worker;
`;

const GROUP_ORDER = [
  "env",
  "transactions",
  "pragmas",
  "features",
  "limits",
  "values",
  "cursor",
  "errors",
  "txsync",
  "clock",
];

const SCENARIO_ORDER = [
  "fk-immediate-violation",
  "fk-deferred-violation",
  "fk-deferred-violation-in-transactionSync",
  "fk-deferred-violation-in-transactionSync-repaired",
  "fk-deferred-violation-repaired",
  "fk-defer-pragma-violation",
  "cursor-exhausted-by-next",
  "cursor-left-open-after-next",
  "cursor-left-open-untouched",
  "cursor-left-open-returning",
];

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = sortKeys(v[k]);
    return o;
  }
  return v;
}

function pkgVersion(name) {
  try {
    const require = createRequire(import.meta.url);
    const path = require.resolve(`${name}/package.json`);
    return JSON.parse(readFileSync(path, "utf8")).version;
  } catch {
    return null;
  }
}

// Condenses the raw probes into the facts a local emulator needs.
function summarize(groups) {
  const s = {};
  const pr = groups.pragmas?.probes ?? [];
  const byName = {};
  for (const r of pr) {
    if (r.id !== "pragma") continue;
    (byName[r.pragma] ??= {})[r.form] = r.ok ? "ok" : r.error?.message;
  }
  s.pragmaForms = byName;
  s.pragmasAllowedInSomeForm = Object.keys(byName)
    .filter((n) => Object.values(byName[n]).includes("ok"))
    .sort();
  s.pragmasAllowedReadForm = Object.keys(byName).filter((n) => byName[n].read === "ok").sort();
  s.pragmasAllowedWriteForm = Object.keys(byName).filter((n) => byName[n].write === "ok").sort();
  s.pragmasAllowedTableValuedForm = Object.keys(byName).filter((n) => byName[n].tvf === "ok").sort();
  s.pragmaRejectionMessages = [...new Set(pr.filter((r) => !r.ok && r.error).map((r) => r.error.message))].sort();
  const tx = groups.transactions?.probes ?? [];
  s.transactionStatementMessages = [...new Set(tx.filter((r) => r.id === "txstmt" && !r.ok).map((r) => r.error.message))];
  s.transactionStatementsAccepted = tx.filter((r) => r.id === "txstmt" && r.ok).map((r) => r.sql);
  const cur = groups.cursor?.probes ?? [];
  s.rowsReadWritten = Object.fromEntries(
    cur
      .filter((r) => r.id.startsWith("rows-") && r.sql && r.ok)
      .map((r) => [r.id, { sql: r.sql, rowsRead: r.rowsRead, rowsWritten: r.rowsWritten }]),
  );
  const lim = groups.limits?.probes ?? [];
  s.statementLengthBisect = lim.find((r) => r.id === "stmt-length-bisect")?.result ?? null;
  for (const id of [
    "value-size-bisect-insert-blob",
    "value-size-bisect-insert-text",
    "value-size-bisect-bind-only-blob",
    "value-size-bisect-two-columns",
  ]) {
    s[id] = lim.find((r) => r.id === id)?.result ?? null;
  }
  return s;
}

async function main() {
  const mf = new Miniflare({
    modulesRoot: HERE,
    modules: [{ type: "ESModule", path: join(HERE, "dosqlite-probe-worker.mjs"), contents: WORKER_SOURCE }],
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: { TENANT: { className: "Tenant", useSQLite: true } },
    cf: false,
    handleRuntimeStdio(stdout, stderr) {
      stdout.pipe(process.stderr);
      stderr.pipe(process.stderr);
    },
  });
  const groups = {};
  const commitScenarios = {};
  const wallMs = {};
  try {
    await mf.ready;
    const get = async (path) => {
      const res = await mf.dispatchFetch(`http://localhost/${path}`);
      const text = await res.text();
      try {
        return JSON.parse(text);
      } catch {
        return { ok: false, status: res.status, body: text.slice(0, 2000) };
      }
    };
    for (const g of GROUP_ORDER) {
      const t0 = performance.now();
      groups[g] = await get(g);
      wallMs[g] = Math.round(performance.now() - t0);
    }
    for (const sc of SCENARIO_ORDER) {
      commitScenarios[sc] = {
        "1-setup": await get(`${sc}/setup`),
        "2-run": await get(`${sc}/run`),
        "3-check": await get(`${sc}/check`),
      };
    }
  } finally {
    await mf.dispose();
  }
  if (groups.clock?.probes?.[0]?.result) {
    groups.clock.probes[0].result.nodeWallClockForRequestMs = wallMs.clock;
  }
  const doc = {
    meta: {
      compatibilityDate: COMPATIBILITY_DATE,
      measuredAt: new Date().toISOString().slice(0, 10),
      miniflare: pkgVersion("miniflare"),
      node: process.version,
      workerdPackage: pkgVersion("workerd"),
      note: "Each group ran in its own SQLite-backed Durable Object instance, in groupOrder. Each commit scenario ran as setup, run and check requests to its own instance.",
      scenarioOrder: SCENARIO_ORDER,
      groupOrder: GROUP_ORDER,
    },
    summary: summarize(groups),
    groups,
    commitScenarios,
  };
  process.stdout.write(JSON.stringify(sortKeys(doc), null, 2) + "\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
