/* The project's StarPU driver: runs one kernel folder written by `examples/peers_io.rs` with
 * StarPU's task API on its OpenCL workers. The NDRange is cut into N blocks of whole
 * work-groups; every sliced buffer is partitioned to match (a vector filter with one length per
 * block), buffers read whole are one handle shared by every task, and StarPU's scheduler (dmda,
 * eager, ws, ...) places the N tasks and moves the data.
 *
 *   starpu-driver DIR [--kernels K] [--sched dmda] [--blocks 8,16,32] [--reps 3] [--warmup 1]
 *                     [--size small] [--cutoff 5]
 *
 * Prints one JSON line per block count: the median ROI of --reps runs (after --warmup untimed
 * runs) and whether every timed run matched the CPU reference; a block count whose first run
 * takes more than --cutoff times the best median so far is not repeated (`"cut":true`). The ROI: from partitioning the
 * data to the outputs gathered back in host memory (every input transfer, kernel and output
 * transfer); registration and program build are outside it.
 * Environment: STARPU_OPENCL_ON_CPUS=1 lets a CPU OpenCL device (PoCL) be a worker;
 * STARPU_NCPU=0 leaves out the native CPU workers (the kernels are OpenCL only);
 * PEERS_WRAP=function compiles the kernel as a plain function called by the wrapper. */
#include <starpu.h>
#include <time.h>

#include "../common/peers_io.h"

static struct peers_desc D;
static struct starpu_opencl_program PROGRAM;
/* The fastest correct setting's median so far, and how many times slower a setting's first run
 * may be before the setting is cut short (--cutoff). */
static double BEST = -1, CUTOFF = 5;
/* Blocks run by each worker in the last run, to show where the scheduler put them. */
#define MAX_WORKERS 64
static int TASKS[MAX_WORKERS];

/* A block of the NDRange: its first work-item and its length (whole work-groups). */
struct block {
    size_t first, items;
};

static int sliced(const struct peers_arg *a)
{
    return a->kind == ARG_IN || a->kind == ARG_INOUT || a->kind == ARG_OUT;
}

static int is_buffer(const struct peers_arg *a)
{
    return sliced(a) || a->kind == ARG_WHOLE;
}

/* The codelet's OpenCL implementation: one launch of the block on the worker's device.
 * StarPU hands each task the block's own piece of every sliced buffer, while the kernels index
 * by the absolute get_global_id: the wrapper kernel shifts each buffer pointer back by the
 * block's first element, so that absolute indices land in the piece. */
static void opencl_block(void *buffers[], void *cl_arg)
{
    const struct block *b = (const struct block *)cl_arg;
    int worker = starpu_worker_get_id();
    if (worker >= 0 && worker < MAX_WORKERS)
        __atomic_fetch_add(&TASKS[worker], 1, __ATOMIC_RELAXED);
    int devid = starpu_worker_get_devid(worker);
    cl_kernel kernel;
    cl_command_queue queue;
    cl_int err = starpu_opencl_load_kernel(&kernel, &queue, &PROGRAM, "peers_block", devid);
    if (err != CL_SUCCESS)
        STARPU_OPENCL_REPORT_ERROR(err);
    int nb = 0;
    for (int i = 0; i < D.nargs; i++) {
        const struct peers_arg *a = &D.args[i];
        if (a->kind == ARG_SCALAR) {
            err = clSetKernelArg(kernel, (cl_uint)i, 4, a->scalar);
        } else if (a->kind == ARG_LOCAL) {
            err = clSetKernelArg(kernel, (cl_uint)i, a->local_bytes, NULL);
        } else {
            cl_mem mem = (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buffers[nb]);
            cl_long shift = (cl_long)(STARPU_VECTOR_GET_OFFSET(buffers[nb]) / a->elem);
            if (sliced(a))
                shift -= (cl_long)(b->first * a->num / a->den);
            err = clSetKernelArg(kernel, (cl_uint)i, sizeof mem, &mem);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(kernel, (cl_uint)(D.nargs + nb), sizeof shift, &shift);
            nb++;
        }
        if (err != CL_SUCCESS)
            STARPU_OPENCL_REPORT_ERROR(err);
    }
    size_t offset = b->first, global = b->items, local = D.local;
    cl_event event;
    err = clEnqueueNDRangeKernel(queue, kernel, 1, &offset, &global, &local, 0, NULL, &event);
    if (err != CL_SUCCESS)
        STARPU_OPENCL_REPORT_ERROR(err);
    clFinish(queue);
    starpu_opencl_collect_stats(event);
    clReleaseEvent(event);
    starpu_opencl_release_kernel(kernel);
}

static struct starpu_perfmodel MODEL = {.type = STARPU_HISTORY_BASED};
static struct starpu_codelet CODELET = {
    .where = STARPU_OPENCL,
    .opencl_funcs = {opencl_block},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &MODEL,
};

/* The kernel's source followed by the wrapper `peers_block`: the same parameters, one shift per
 * buffer appended, and a call of the kernel with every buffer pointer shifted. OpenCL C lets a
 * kernel call another; with `as_function`, the kernel is compiled as a plain function instead
 * (`__kernel` defined away around it), for a compiler that refuses the call. */
static char *wrapped_source(const char *kernels, int as_function)
{
    char *source = peers_source(kernels, &D);
    if (!source)
        return NULL;
    size_t cap = strlen(source) + 4096;
    char *out = (char *)malloc(cap);
    int n = snprintf(out, cap, "%s%s\n%s__kernel void peers_block(",
                     as_function ? "#define __kernel\n" : "", source,
                     as_function ? "#undef __kernel\n" : "");
    free(source);
    for (int i = 0; i < D.nargs; i++) {
        const struct peers_arg *a = &D.args[i];
        const char *space = a->kind == ARG_LOCAL ? "__local " : is_buffer(a) ? "__global " : "";
        n += snprintf(out + n, cap - n, "%s%s%s %sa%d", i ? ", " : "", space, a->cltype,
                      (is_buffer(a) || a->kind == ARG_LOCAL) ? "*" : "", i);
    }
    for (int i = 0; i < D.nargs; i++)
        if (is_buffer(&D.args[i]))
            n += snprintf(out + n, cap - n, ", long s%d", i);
    n += snprintf(out + n, cap - n, ")\n{\n    %s(", D.function);
    for (int i = 0; i < D.nargs; i++)
        n += snprintf(out + n, cap - n, is_buffer(&D.args[i]) ? "%sa%d + s%d" : "%sa%d",
                      i ? ", " : "", i, i);
    snprintf(out + n, cap - n, ");\n}\n");
    return out;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One run with `nblocks` blocks; returns its ROI in seconds, or a negative number on failure. */
static double run_once(int nblocks, const struct block *blocks, uint32_t **lengths)
{
    starpu_data_handle_t handles[PEERS_MAX_ARGS];
    enum starpu_data_access_mode modes[PEERS_MAX_ARGS];
    int nh = 0;
    if (peers_prepare(&D))
        return -1;
    memset(TASKS, 0, sizeof TASKS);
    for (int i = 0; i < D.nargs; i++) {
        struct peers_arg *a = &D.args[i];
        if (!is_buffer(a))
            continue;
        starpu_vector_data_register(&handles[nh], STARPU_MAIN_RAM, (uintptr_t)a->data,
                                    (uint32_t)a->count, a->elem);
        modes[nh] = a->kind == ARG_OUT ? STARPU_W : a->kind == ARG_INOUT ? STARPU_RW : STARPU_R;
        nh++;
    }
    double t0 = now();
    int h = 0;
    for (int i = 0; i < D.nargs; i++) {
        if (!is_buffer(&D.args[i]))
            continue;
        if (sliced(&D.args[i])) {
            struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list,
                                           .nchildren = (unsigned)nblocks,
                                           .filter_arg_ptr = lengths[i]};
            starpu_data_partition(handles[h], &f);
        }
        h++;
    }
    for (int b = 0; b < nblocks; b++) {
        struct starpu_task *task = starpu_task_create();
        task->cl = &CODELET;
        task->nbuffers = nh;
        task->cl_arg = (void *)&blocks[b];
        task->cl_arg_size = sizeof blocks[b];
        h = 0;
        for (int i = 0; i < D.nargs; i++) {
            if (!is_buffer(&D.args[i]))
                continue;
            task->handles[h] = sliced(&D.args[i]) ? starpu_data_get_sub_data(handles[h], 1, b)
                                                  : handles[h];
            task->modes[h] = modes[h];
            h++;
        }
        if (starpu_task_submit(task)) {
            fprintf(stderr, "starpu-driver: task submission failed\n");
            return -1;
        }
    }
    starpu_task_wait_for_all();
    h = 0;
    for (int i = 0; i < D.nargs; i++) {
        if (!is_buffer(&D.args[i]))
            continue;
        if (sliced(&D.args[i]))
            starpu_data_unpartition(handles[h], STARPU_MAIN_RAM);
        h++;
    }
    double roi = now() - t0;
    for (h = 0; h < nh; h++)
        starpu_data_unregister(handles[h]);
    return roi;
}

/* Every timed run of one block count, and its JSON line. */
static int sweep_point(int nblocks, int reps, int warmup, const char *sched, const char *size)
{
    size_t groups = D.global / D.local;
    if ((size_t)nblocks > groups)
        nblocks = (int)groups;
    struct block *blocks = (struct block *)calloc((size_t)nblocks, sizeof *blocks);
    uint32_t *lengths[PEERS_MAX_ARGS] = {0};
    for (int b = 0; b < nblocks; b++) {
        size_t g0 = groups * b / nblocks, g1 = groups * (b + 1) / nblocks;
        blocks[b].first = g0 * D.local;
        blocks[b].items = (g1 - g0) * D.local;
    }
    for (int i = 0; i < D.nargs; i++) {
        const struct peers_arg *a = &D.args[i];
        if (!sliced(a))
            continue;
        lengths[i] = (uint32_t *)calloc((size_t)nblocks, sizeof(uint32_t));
        for (int b = 0; b < nblocks; b++) {
            size_t end = blocks[b].first + blocks[b].items;
            lengths[i][b] = (uint32_t)(end * a->num / a->den - blocks[b].first * a->num / a->den);
        }
    }
    double times[64];
    int ok = 1, timed = 0, cut = 0;
    char detail[256] = "";
    for (int r = 0; r < warmup + reps && timed < 64; r++) {
        double t = run_once(nblocks, blocks, lengths);
        int good = t >= 0 && peers_verify(&D, detail, sizeof detail);
        /* A setting far slower than the best so far (a slow device handed a large block) is
         * not repeated: its first run stands as its time. */
        cut = r == 0 && BEST > 0 && t > CUTOFF * BEST;
        if (r >= warmup || cut) {
            times[timed++] = t;
            ok &= good;
        }
        if (cut)
            break;
    }
    double median = timed ? peers_median(times, timed) : -1;
    if (ok && timed && median > 0 && (BEST < 0 || median < BEST))
        BEST = median;
    char per_worker[512] = "";
    unsigned nworkers = starpu_worker_get_count();
    for (unsigned w = 0, n = 0; w < nworkers && w < MAX_WORKERS; w++)
        n += snprintf(per_worker + n, sizeof per_worker - n, "%s%d", w ? "," : "", TASKS[w]);
    if (timed)
        printf("{\"peer\":\"starpu\",\"setting\":\"%s blocks=%d\",\"sched\":\"%s\",\"blocks\":%d,"
               "\"kernel\":\"%s\",\"size\":\"%s\",\"roi_seconds\":%.6f,\"reps\":%d,\"cut\":%s,"
               "\"ok\":%s,\"workers\":%u,\"blocks_per_worker\":[%s],\"detail\":\"%s\"}\n",
               sched, nblocks, sched, nblocks, D.name, size, median, timed, cut ? "true" : "false",
               ok ? "true" : "false", starpu_opencl_worker_get_count(), per_worker, detail);
    fflush(stdout);
    for (int i = 0; i < D.nargs; i++)
        free(lengths[i]);
    free(blocks);
    return ok;
}

int main(int argc, char **argv)
{
    const char *kernels = "kernels", *sched = "dmda", *blocks = "16", *size = "?";
    int reps = 3, warmup = 1;
    if (argc < 2) {
        fprintf(stderr, "usage: starpu-driver DIR [--kernels K] [--sched S] [--blocks 8,16] "
                        "[--reps R] [--warmup W] [--size LABEL]\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--kernels"))
            kernels = argv[i + 1];
        else if (!strcmp(argv[i], "--sched"))
            sched = argv[i + 1];
        else if (!strcmp(argv[i], "--blocks"))
            blocks = argv[i + 1];
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup"))
            warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = argv[i + 1];
        else if (!strcmp(argv[i], "--cutoff"))
            CUTOFF = atof(argv[i + 1]);
        else {
            fprintf(stderr, "starpu-driver: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (peers_open(argv[1], &D))
        return 2;
    char symbol[128];
    snprintf(symbol, sizeof symbol, "hetdsl_peers_%s_%s", D.name, size);
    MODEL.symbol = symbol;
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.sched_policy_name = sched;
    conf.ncpus = 0;
    conf.ncuda = 0;
    if (starpu_init(&conf)) {
        fprintf(stderr, "starpu-driver: starpu_init failed\n");
        return 2;
    }
    if (starpu_opencl_worker_get_count() == 0) {
        fprintf(stderr, "starpu-driver: no OpenCL worker (STARPU_OPENCL_ON_CPUS=1 for PoCL?)\n");
        starpu_shutdown();
        return 2;
    }
    /* Pinned host memory lets StarPU overlap its transfers (it warns otherwise). */
    for (int i = 0; i < D.nargs; i++)
        if (is_buffer(&D.args[i]))
            starpu_memory_pin(D.args[i].data, D.args[i].elem * D.args[i].count);
    /* PEERS_WRAP=function starts with the function form. */
    const char *wrap = getenv("PEERS_WRAP");
    char *source = wrapped_source(kernels, wrap && !strcmp(wrap, "function"));
    if (source && starpu_opencl_load_opencl_from_string(source, &PROGRAM, D.options)) {
        fprintf(stderr, "starpu-driver: %s: the kernel-calling wrapper did not build; "
                        "compiling the kernel as a function instead\n", D.source);
        free(source);
        source = wrapped_source(kernels, 1);
        if (source && starpu_opencl_load_opencl_from_string(source, &PROGRAM, D.options)) {
            free(source);
            source = NULL;
        }
    }
    if (!source) {
        fprintf(stderr, "starpu-driver: building %s failed\n", D.source);
        starpu_shutdown();
        return 2;
    }
    double counts[32];
    int n = peers_list(blocks, counts, 32), all_ok = 1;
    for (int k = 0; k < n; k++)
        all_ok &= sweep_point((int)counts[k], reps, warmup, sched, size);
    starpu_opencl_unload_opencl(&PROGRAM);
    starpu_shutdown();
    free(source);
    return all_ok ? 0 : 1;
}
