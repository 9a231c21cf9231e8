/* The peers' drivers' shared half: reading a kernel's folder written by `examples/peers_io.rs`
 * (its desc.txt, the input files, the checks' indices and CPU references), preparing the host
 * buffers before each run and checking the outputs with the suite's tolerance rules.
 * Header-only C, also compiled as C++ by the EngineCL driver. */
#ifndef PEERS_IO_H
#define PEERS_IO_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEERS_MAX_ARGS 16
#define PEERS_MAX_CHECKS 8

enum peers_kind { ARG_SCALAR, ARG_WHOLE, ARG_IN, ARG_INOUT, ARG_OUT, ARG_LOCAL };

struct peers_arg {
    enum peers_kind kind;
    char cltype[16];
    /* Scalars: 4 bytes (float or int). */
    unsigned char scalar[4];
    /* Buffers: element size, count, pattern (num elements per den work-items), host data. */
    size_t elem, count, num, den;
    char file[256];
    unsigned char *data;
    /* In-out buffers: their input, restored into `data` before every run. */
    unsigned char *initial;
    /* Local arguments: their size in bytes. */
    size_t local_bytes;
};

struct peers_check {
    char rule[16], type[8];
    int arg;
    size_t comp, n;
    uint64_t *idx;
    double *ref;
    double p1, p2;
};

struct peers_desc {
    char dir[512], name[64], source[256], function[64];
    /* Build options the kernel needs (empty if none). */
    char options[256];
    size_t global, local;
    int nargs, nchecks;
    struct peers_arg args[PEERS_MAX_ARGS];
    struct peers_check checks[PEERS_MAX_CHECKS];
};

/* The whole file, NUL-terminated; NULL (with a message) if unreadable. `len` gets its size. */
static unsigned char *peers_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "peers: cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = (unsigned char *)malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "peers: cannot read %s\n", path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[size] = 0;
    if (len)
        *len = (size_t)size;
    return buf;
}

/* Load `<dir>/<file>`, which must hold exactly `bytes` bytes. */
static unsigned char *peers_load(const char *dir, const char *file, size_t bytes)
{
    char path[1024];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    unsigned char *data = peers_read_file(path, &len);
    if (data && len != bytes) {
        fprintf(stderr, "peers: %s holds %zu bytes, expected %zu\n", path, len, bytes);
        free(data);
        return NULL;
    }
    return data;
}

static int peers_parse_arg(struct peers_desc *d, const char *rest)
{
    struct peers_arg *a = &d->args[d->nargs];
    char kind[16];
    memset(a, 0, sizeof *a);
    if (d->nargs >= PEERS_MAX_ARGS || sscanf(rest, "%15s %15s", kind, a->cltype) != 2)
        return -1;
    rest = strchr(strchr(rest, ' ') + 1, ' ');
    if (!rest)
        return -1;
    if (!strcmp(kind, "scalar")) {
        a->kind = ARG_SCALAR;
        if (!strcmp(a->cltype, "float")) {
            float v = strtof(rest, NULL);
            memcpy(a->scalar, &v, 4);
        } else {
            int32_t v = (int32_t)strtol(rest, NULL, 10);
            memcpy(a->scalar, &v, 4);
        }
    } else if (!strcmp(kind, "local")) {
        a->kind = ARG_LOCAL;
        a->local_bytes = strtoul(rest, NULL, 10);
    } else if (!strcmp(kind, "whole")) {
        a->kind = ARG_WHOLE;
        a->num = a->den = 0;
        if (sscanf(rest, "%zu %zu %255s", &a->elem, &a->count, a->file) != 3)
            return -1;
    } else {
        a->kind = !strcmp(kind, "in") ? ARG_IN : !strcmp(kind, "inout") ? ARG_INOUT : ARG_OUT;
        if (strcmp(kind, "in") && strcmp(kind, "inout") && strcmp(kind, "out"))
            return -1;
        if (sscanf(rest, "%zu %zu %zu %zu %255s", &a->elem, &a->count, &a->num, &a->den, a->file) != 5)
            return -1;
    }
    d->nargs++;
    return 0;
}

static int peers_parse_check(struct peers_desc *d, const char *rest)
{
    struct peers_check *c = &d->checks[d->nchecks];
    char idx[256], ref[256];
    size_t len = 0;
    if (d->nchecks >= PEERS_MAX_CHECKS ||
        sscanf(rest, "%15s %d %7s %zu %255s %255s %lf %lf", c->rule, &c->arg, c->type, &c->comp, idx,
               ref, &c->p1, &c->p2) != 8)
        return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d->dir, idx);
    c->idx = (uint64_t *)peers_read_file(path, &len);
    c->n = len / 8;
    snprintf(path, sizeof path, "%s/%s", d->dir, ref);
    c->ref = (double *)peers_read_file(path, &len);
    if (!c->idx || !c->ref || c->n == 0 || len != c->n * c->comp * 8 || c->arg < 0 ||
        c->arg >= d->nargs)
        return -1;
    d->nchecks++;
    return 0;
}

/* Parse `<dir>/desc.txt` and load every input; outputs are allocated. 0 on success. */
static int peers_open(const char *dir, struct peers_desc *d)
{
    char path[1024];
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/desc.txt", dir);
    char *text = (char *)peers_read_file(path, NULL);
    if (!text)
        return -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int bad = 0;
        if (!strncmp(line, "kernel ", 7))
            bad = sscanf(line + 7, "%63s", d->name) != 1;
        else if (!strncmp(line, "source ", 7))
            bad = sscanf(line + 7, "%255s", d->source) != 1;
        else if (!strncmp(line, "function ", 9))
            bad = sscanf(line + 9, "%63s", d->function) != 1;
        else if (!strncmp(line, "global ", 7))
            bad = sscanf(line + 7, "%zu", &d->global) != 1;
        else if (!strncmp(line, "options ", 8))
            snprintf(d->options, sizeof d->options, "%s", line + 8);
        else if (!strncmp(line, "local ", 6))
            bad = sscanf(line + 6, "%zu", &d->local) != 1;
        else if (!strncmp(line, "arg ", 4))
            bad = peers_parse_arg(d, line + 4);
        else if (!strncmp(line, "check ", 6)) {
            /* strtok keeps its place in `text`; the check's own parsing uses sscanf only. */
            bad = peers_parse_check(d, line + 6);
        } else
            bad = 1;
        if (bad) {
            fprintf(stderr, "peers: %s: bad line `%s`\n", path, line);
            free(text);
            return -1;
        }
    }
    free(text);
    if (!d->global || !d->local || d->global % d->local || !d->nchecks) {
        fprintf(stderr, "peers: %s: global/local/check missing or inconsistent\n", path);
        return -1;
    }
    for (int i = 0; i < d->nargs; i++) {
        struct peers_arg *a = &d->args[i];
        if (a->kind == ARG_WHOLE || a->kind == ARG_IN || a->kind == ARG_INOUT) {
            a->data = peers_load(dir, a->file, a->elem * a->count);
            if (!a->data)
                return -1;
        } else if (a->kind == ARG_OUT) {
            a->data = (unsigned char *)malloc(a->elem * a->count);
        }
        if (a->kind == ARG_INOUT) {
            a->initial = (unsigned char *)malloc(a->elem * a->count);
            memcpy(a->initial, a->data, a->elem * a->count);
        }
        if ((a->kind == ARG_IN || a->kind == ARG_INOUT || a->kind == ARG_OUT) &&
            (a->den == 0 || d->global * a->num / a->den != a->count)) {
            fprintf(stderr, "peers: %s: argument %d's pattern does not cover the range\n", path, i);
            return -1;
        }
    }
    return 0;
}

/* Before every run: outputs poisoned (so an element never written fails its check), in-out
 * buffers restored to their input. The host buffers stay where they are (drivers may pin them). */
static int peers_prepare(struct peers_desc *d)
{
    for (int i = 0; i < d->nargs; i++) {
        struct peers_arg *a = &d->args[i];
        if (a->kind == ARG_OUT) {
            /* A computed uchar4 pixel always has alpha 255, so zeroes are never a result;
             * 0xFF bytes are NaN in floats and -1 in the (non-negative) integer outputs. */
            memset(a->data, !strncmp(a->cltype, "uchar", 5) ? 0 : 0xFF, a->elem * a->count);
        } else if (a->kind == ARG_INOUT) {
            memcpy(a->data, a->initial, a->elem * a->count);
        }
    }
    return 0;
}

/* Component `c` of checked element `k` of argument `a` as a double. */
static double peers_value(const struct peers_arg *a, const struct peers_check *c, size_t k, size_t j)
{
    size_t at = (size_t)c->idx[k] * c->comp + j;
    if (!strcmp(c->type, "u8"))
        return (double)a->data[at];
    if (!strcmp(c->type, "i32")) {
        int32_t v;
        memcpy(&v, a->data + 4 * at, 4);
        return (double)v;
    }
    float v;
    memcpy(&v, a->data + 4 * at, 4);
    return (double)v;
}

/* Apply every check; 1 if all pass. `detail` gets the first failure (or the last figure). */
static int peers_verify(const struct peers_desc *d, char *detail, size_t detail_len)
{
    int ok = 1;
    detail[0] = 0;
    for (int i = 0; i < d->nchecks; i++) {
        const struct peers_check *c = &d->checks[i];
        const struct peers_arg *a = &d->args[c->arg];
        size_t bad = 0, width = strcmp(c->type, "u8") ? 4 : 1;
        if ((c->idx[c->n - 1] + 1) * c->comp * width > a->elem * a->count) {
            snprintf(detail, detail_len, "check %d: index past the output", i);
            return 0;
        }
        double diff = 0, norm = 0;
        for (size_t k = 0; k < c->n; k++) {
            int pixel_bad = 0;
            for (size_t j = 0; j < c->comp; j++) {
                double o = peers_value(a, c, k, j), r = c->ref[k * c->comp + j];
                double e = fabs(o - r);
                diff += (o - r) * (o - r);
                norm += r * r;
                if (!strcmp(c->rule, "close")) {
                    double tol = fmax(c->p1, c->p2 * fabs(r));
                    bad += !(e <= tol);
                } else if (!strcmp(c->rule, "equal")) {
                    bad += o != r;
                } else if (!strcmp(c->rule, "pixels")) {
                    pixel_bad |= !(e <= c->p1);
                }
            }
            bad += pixel_bad;
        }
        int pass;
        if (!strcmp(c->rule, "l2")) {
            double err = sqrt(diff / norm);
            pass = norm >= 1e-7 && err < c->p1;
            snprintf(detail, detail_len, "arg %d relative L2 %.2e (limit %.0e)", c->arg, err, c->p1);
        } else if (!strcmp(c->rule, "pixels")) {
            pass = (double)bad / (double)c->n < c->p2;
            snprintf(detail, detail_len, "arg %d: %zu of %zu pixels off", c->arg, bad, c->n);
        } else {
            pass = bad == 0;
            snprintf(detail, detail_len, "arg %d: %zu of %zu elements off (%s)", c->arg, bad,
                     c->n * c->comp, c->rule);
        }
        if (!pass)
            return 0;
        ok &= pass;
    }
    return ok;
}

/* The kernel source: `<kernels>/<source>`, or the folder's own file for `./<file>`. */
static char *peers_source(const char *kernels, const struct peers_desc *d)
{
    char path[1024];
    if (!strncmp(d->source, "./", 2))
        snprintf(path, sizeof path, "%s/%s", d->dir, d->source + 2);
    else
        snprintf(path, sizeof path, "%s/%s", kernels, d->source);
    return (char *)peers_read_file(path, NULL);
}

static int peers_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double peers_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, peers_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Comma-separated numbers (`4,8,16`) into `out`; returns how many. */
static int peers_list(const char *text, double *out, int max)
{
    int n = 0;
    while (text && *text && n < max) {
        char *end;
        out[n++] = strtod(text, &end);
        text = *end == ',' ? end + 1 : NULL;
    }
    return n;
}

#endif
