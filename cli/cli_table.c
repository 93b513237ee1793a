/* cli_table.c: the CLI's plain text tables (gt_cli.h): cells collected row
 * by row, then printed with each column as wide as its widest cell, so that
 * `status`, `results` and `workers` line up without knowing widths first. */
#include "gt_cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gt_cli_table_cell(gt_cli_table *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c) {
            t->oom = 1;
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&t->cells[t->n], fmt, ap);
    va_end(ap);
    if (r < 0) {
        t->oom = 1;
        return;
    }
    t->n++;
}

int gt_cli_table_print(const gt_cli_table *t)
{
    if (t->oom) {
        gt_cli_errorf("out of memory");
        return -1;
    }
    size_t w[32] = {0};
    int nc = t->ncols < 32 ? t->ncols : 32;
    for (int c = 0; c < nc; c++)
        w[c] = strlen(t->head[c]);
    for (size_t i = 0; i < t->n; i++) {
        size_t l = strlen(t->cells[i]);
        if (l > w[i % (size_t)nc])
            w[i % (size_t)nc] = l;
    }
    for (size_t row = 0; row <= t->n / (size_t)nc; row++) {
        if (row > 0 && (row - 1) * (size_t)nc >= t->n)
            break;
        for (int c = 0; c < nc; c++) {
            const char *s = row == 0 ? t->head[c] : t->cells[(row - 1) * (size_t)nc + (size_t)c];
            int width = c == nc - 1 ? 0 : (int)w[c];
            if (t->align[c] == 'r')
                printf("%*s", width, s);
            else
                printf("%-*s", width, s);
            fputs(c == nc - 1 ? "\n" : "  ", stdout);
        }
    }
    return 0;
}

void gt_cli_table_free(gt_cli_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->n = t->cap = 0;
}
