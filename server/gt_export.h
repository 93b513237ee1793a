/* gt_export.h: exported result databases (module prefix gt_export_).
 *
 * Owns the standalone SQLite files described by schema/export.sql and
 * schema/EXPORT.md: writing one run of the coordinator database into such a
 * file, and merging several of them into one. Output files are always new:
 * they are written under a temporary name in the destination folder and only
 * appear under their final name once complete, so a reader never sees a
 * half-written export. */
#ifndef GT_EXPORT_H
#define GT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/* Version of the export format written (meta.format_version); readers refuse
 * files with a newer one. */
#define GT_EXPORT_FORMAT_VERSION 1
/* gemmtune release recorded in meta.gemmtune_version and printed by --version. */
#define GT_GEMMTUNE_VERSION "0.1.0"

/* Creates the export tables (schema/export.sql) in db, which should be empty.
 * 0, or -1 with a message in err. */
int gt_export_schema(sqlite3 *db, char *err, size_t errlen);

/* Writes run run_id of the coordinator database db into a new export file at
 * path; fails when path exists. source names where the data came from, e.g.
 * "<host>/run/<id>", and is stored in meta and in every results/best row.
 *
 * The export file is ATTACHed to db for the copy (one transaction of
 * INSERT ... SELECT) and DETACHed before returning, so the caller must hold
 * db exclusively for the duration and must not have a transaction open on it.
 * 0, or -1 with a message in err (nothing is left at path then). */
int gt_export_run(sqlite3 *db, int64_t run_id, const char *source, const char *path, char *err,
                  size_t errlen);

/* Combines n export files into a new export file at out (fails when out
 * exists). Problems are unified by their canonical key; of differing
 * call_count and weight the largest is kept (the inputs are usually the same
 * workload tuned on several machines, where a sum would count its calls
 * twice). Every result row is kept (identical rows, same source, collapse).
 * best holds, per problem key, backend and device model, the row with the
 * smallest time_us over all inputs, with its baseline_us, uplift and source;
 * on a tie the earlier input wins. Every input is checked first: a file that
 * is not an export, lacks a table or has a newer format_version is refused
 * with its name in err. 0, or -1 with a message in err. */
int gt_export_merge(const char *const *inputs, size_t n, const char *out, char *err,
                    size_t errlen);

/* 1 when table of the attached database `schema` ("main": the file db
 * opened) has the column, 0 when not, -1 when the question cannot be asked.
 * An export written before a column was added lacks it: its readers
 * (`gemmtune merge`, `verify`, `report --db`) ask before they name it. */
int gt_export_has_column(sqlite3 *db, const char *schema, const char *table, const char *col);

#endif
