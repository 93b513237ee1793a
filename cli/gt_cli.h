/* gt_cli.h: what the gemmtune command-line client's commands share (module
 * prefix gt_cli_): messages, option parsing, reading the coordinator's JSON
 * answers and calling its HTTP API (cli.c), plain text tables
 * (cli_table.c); and the commands that read a run (cli_runs.c). Used by
 * main_gemmtune.c and report.c.
 *
 * cli/ owns the `gemmtune` program: its commands (main_gemmtune.c,
 * cli_runs.c, report.c), its HTTP/1.1 client (gt_httpc.h) and what they
 * share; library gt_cli, which the unit tests link for gt_httpc_ too. It
 * sits at the top of the layers (common <- proto, gen, cuda <- server,
 * worker, lib <- cli, python, bench) and talks to the coordinator over HTTP
 * only, so it may include common/ headers (gt_policy.h for the tuning
 * policy it prints), and of server/ only gt_export.h: `merge`, `report --db`
 * and `export --tunableop` work on export files locally (library gt_export,
 * SQLite). Of worker/, only the backend interface and the paired rounds
 * over it (gt_backend.h, gt_bk_paired.h; library gt_bk): `verify` re-times
 * cpu entries with the worker's own backend, never a copy of it. Never the
 * store, HTTP server, dispatcher or the worker's protocol side: nothing
 * here links gt_server, libmicrohttpd or nng. */
#ifndef GT_CLI_H
#define GT_CLI_H

#include "gt_httpc.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes: 0 success. */
#define GT_CLI_EXIT_ERR 1
#define GT_CLI_EXIT_USAGE 2

/* The coordinator a command talks to, and how its usage errors read. */
typedef struct gt_cli {
    const char *server; /* base URL */
    const char *token;  /* API token (Authorization: Bearer), NULL: none */
    const char *usage;  /* printed after a usage error; NULL: the message only */
} gt_cli;

/* ---- messages (stderr) ---- */

/* "gemmtune: <message>". */
void gt_cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, then a blank line and c->usage when it is set. */
void gt_cli_usage_error(const gt_cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- options ---- */

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]. 1: matched, value in
 * *val and *i advanced past it; 0: another argument; -1: value missing (a
 * usage error, printed). */
int gt_cli_opt_val(const gt_cli *c, int argc, char **argv, int *i, const char *name,
                   const char **val);
/* Consumes --server/--token wherever they appear. 1, 0 or -1 as opt_val. */
int gt_cli_global_opt(gt_cli *c, int argc, char **argv, int *i);
/* 1 when a looks like an option ("-" alone is a word: stdin). */
int gt_cli_is_option(const char *a);
/* A run id: a positive integer. 0, or -1 after a usage error. */
int gt_cli_run_id(const gt_cli *c, const char *s, int64_t *id);

/* One option of a command. */
typedef struct gt_cli_opt {
    const char *name;
    const char **val; /* a value option: "--name V" or "--name=V" */
    int *flag;        /* else a flag: "--name" alone sets *flag to 1 */
} gt_cli_opt;

/* A command's words, as gt_cli_parse reads them. */
typedef struct gt_cli_cmd {
    const char *name;        /* in "<name>: unknown option X" */
    const gt_cli_opt *opts;  /* ends with a NULL name; NULL: none */
    size_t max_words;        /* positional words accepted */
    const char *too_many;    /* the usage error for one more (NULL when
                                max_words is argc: never needed) */
} gt_cli_cmd;

/* Parses the words after a command's name: --server/--token anywhere, the
 * command's options, and at most cmd->max_words positional words, stored in
 * words[] (*nwords of them). 0, or -1 after a usage error. */
int gt_cli_parse(gt_cli *c, const gt_cli_cmd *cmd, int argc, char **argv, const char **words,
                 size_t *nwords);

/* ---- the coordinator's JSON (o may be NULL) ---- */

const cJSON *gt_cli_jget(const cJSON *o, const char *name);
/* 1 with the value in *v when the field is a number, else 0. */
int gt_cli_jnum(const cJSON *o, const char *name, double *v);
double gt_cli_jnum_or(const cJSON *o, const char *name, double dflt);
const char *gt_cli_jstr(const cJSON *o, const char *name, const char *dflt);
/* A number field times scale formatted with fmt into buf, or "-" when it is
 * absent or null. */
const char *gt_cli_fnum(char *buf, size_t n, const cJSON *o, const char *name, const char *fmt,
                        double scale);
/* A human duration: 45s, 2m10s, 1h02m ("?" when s is not a duration). */
void gt_cli_fmt_dur(char *buf, size_t n, double s);

/* ---- the HTTP API ---- */

#define GT_CLI_API_TRANSPORT (-2)

/* Prints the server's {"error", "details"} (or whatever came back). */
void gt_cli_print_server_error(const gt_httpc_resp *r);
/* Calls the API. 0 with the response in resp (2xx only; the caller frees
 * it) and, when out is given, its JSON in *out (the caller deletes it); -1
 * after printing the server's error; GT_CLI_API_TRANSPORT when the server
 * could not be reached (message printed). */
int gt_cli_api(const gt_cli *c, const char *method, const char *path, const char *body,
               size_t body_len, gt_httpc_resp *resp, cJSON **out);
/* GET path as JSON into *out (the caller deletes it); return value as
 * gt_cli_api. */
int gt_cli_get_json(const gt_cli *c, const char *path, cJSON **out);
/* GET path and copy the body to stdout. 0, or -1 after a message; a failed
 * write reads "<what>: <reason>". */
int gt_cli_get_stdout(const gt_cli *c, const char *path, const char *what);
/* GET path into the new file out (never replacing one) and print
 * "<out>: N bytes written". 0, or -1 after a message. */
int gt_cli_download(const gt_cli *c, const char *path, const char *out);

/* ---- commands that read a run, and verify-run (cli_runs.c) ---- */

/* `status [RUN] [--wait]` and `results RUN [--csv] [--all]`: argv holds the
 * words after the command name. Returns the exit code. */
int gt_cli_cmd_status(gt_cli *c, int argc, char **argv);
int gt_cli_cmd_results(gt_cli *c, int argc, char **argv);
/* `verify-run RUN [--tolerance X]`: POST /v1/runs/{RUN}/verify, wait for the
 * verify run as status --wait does, print each GEMM's stored and re-timed
 * uplift and verdict. Returns 0 when every GEMM passed, 1 when one failed,
 * 2 for an error (usage, HTTP, the verify run failed or was cancelled). */
int gt_cli_cmd_verify_run(gt_cli *c, int argc, char **argv);

/* ---- verify (cli_verify.c) ---- */

/* `verify EXPORT.db [...]`: re-times every best entry against its baseline
 * here with the final phase's paired rounds. Returns the exit code: 0 when
 * every entry passed, 1 when one failed, was refused (cuda) or errored. */
int gt_cli_cmd_verify(gt_cli *c, int argc, char **argv);
/* The verdict: the re-timed uplift within tolerance (a fraction) of the
 * stored one, |retimed / stored - 1| <= tolerance; 0 when either is not a
 * positive number. */
int gt_cli_verify_pass(double stored, double retimed, double tolerance);

/* ---- a plain text table (cli_table.c) ---- */

typedef struct gt_cli_table {
    int ncols;
    const char *const *head;
    const char *align; /* per column: 'l' or 'r' */
    char **cells;
    size_t n, cap;
    int oom;
} gt_cli_table;

/* Appends the next cell, row by row; out of memory is reported by print. */
void gt_cli_table_cell(gt_cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the table; the last column is never padded (configs run long).
 * 0, or -1 after a message. */
int gt_cli_table_print(const gt_cli_table *t);
void gt_cli_table_free(gt_cli_table *t);

#endif
