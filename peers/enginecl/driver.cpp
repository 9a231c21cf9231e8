// The project's EngineCL driver: runs one kernel folder written by `examples/peers_io.rs` through
// EngineCL's Tier-2 API (Runtime, StaticScheduler, DynamicScheduler) on the chosen OpenCL
// devices, and checks the output with the suite's rules.
//
//   enginecl-driver DIR [--kernels K] [--devices 0,1,2] [--static 0.5,0.7,0.9,1.0]
//                       [--dynamic 4,16,64] [--reps 3] [--warmup 1] [--size small] [--cutoff 5]
//
// `--static g`: the GPUs (devices of OpenCL type GPU; without any, every device but the first)
// share the fraction g of the range equally, the others share 1 - g; g = 1 runs the GPUs
// alone. `--dynamic c`: the range in c equal chunks handed out on demand.
// Prints one JSON line per setting with the median of --reps runs (after --warmup untimed); a
// setting whose first run takes more than --cutoff times the best median so far is not
// repeated (`"cut":true`).
// Two timers: `roi_seconds`, from the devices released to run (inputs already written, kernel
// built) to the last package's outputs read back, taken from EngineCL's own per-device
// timestamps (millisecond resolution); `run_seconds`, the whole `Runtime::run()` (OpenCL set-up,
// program build, input writes, kernels, read-backs), which EngineCL repeats on every run.
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "EngineCL.hpp"

#include "../common/peers_io.h"

using std::string;
using std::vector;

static struct peers_desc D;

struct FlatDevice
{
  unsigned platform, device;
  bool gpu;
};

// Every OpenCL device in platform order, as EngineCL (and hetdsl) enumerate them.
static vector<FlatDevice>
enumerate_devices()
{
  vector<FlatDevice> all;
  cl_uint np = 0;
  clGetPlatformIDs(0, nullptr, &np);
  vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS)
      continue;
    vector<cl_device_id> devices(nd);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d) {
      cl_device_type type = 0;
      clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      all.push_back({ p, d, (type & CL_DEVICE_TYPE_GPU) != 0 });
    }
  }
  return all;
}

// The devices of a setting with their shares of the range (static) or none (dynamic).
struct Setting
{
  string label;
  vector<FlatDevice> devices;
  bool dynamic;
  double gpu_share;
  int chunks;
};

// Static shares: the "GPU" group gets g split equally, the rest 1 - g split equally.
static vector<float>
static_props(const vector<FlatDevice>& devices, double g)
{
  // g = 1: the devices given are the GPUs alone, in equal shares.
  if (g >= 1.0)
    return vector<float>(devices.size() - 1, 1.0f / (float)devices.size());
  bool any_gpu = std::any_of(devices.begin(), devices.end(), [](const FlatDevice& d) { return d.gpu; });
  auto fast = [&](size_t i) { return any_gpu ? devices[i].gpu : i > 0; };
  size_t nfast = 0;
  for (size_t i = 0; i < devices.size(); ++i)
    nfast += fast(i);
  size_t nslow = devices.size() - nfast;
  vector<float> props;
  for (size_t i = 0; i + 1 < devices.size(); ++i)
    props.push_back((float)(fast(i) ? g / nfast : (1.0 - g) / nslow));
  return props;
}

// EngineCL prints each device's timestamps (milliseconds since the device object was made, all
// made together): `deviceRun` under "duration offsets from init:", and every package (chunk) as
// `offset+size:start_ms+duration_ms` after "type-chunks,". The ROI runs from the earliest
// `deviceRun` to the end of the last package (its output read back). (`deviceEnd` is recorded
// after `Runtime::run()` has already returned, so it cannot close the ROI.)
// The packages (EngineCL's "works") each device ran, in device order.
static string
packages_from_stats(const string& stats)
{
  std::istringstream in(stats);
  string line, out;
  while (std::getline(in, line)) {
    unsigned long works = 0, size = 0;
    if (sscanf(line.c_str(), "works: %lu works_size: %lu", &works, &size) == 2)
      out += (out.empty() ? "" : ",") + std::to_string(works);
  }
  return out;
}

static double
roi_from_stats(const string& stats)
{
  std::istringstream in(stats);
  string line;
  bool offsets = false;
  double first_run = 1e300, last_end = -1;
  while (std::getline(in, line)) {
    if (line.find("duration offsets from init:") != string::npos) {
      offsets = true;
      continue;
    }
    if (line.rfind("Device id:", 0) == 0 || line.rfind("use events", 0) == 0)
      offsets = false;
    double ms = 0;
    if (offsets && sscanf(line.c_str(), " deviceRun: %lf", &ms) == 1)
      first_run = std::min(first_run, ms);
    auto chunks = line.find("type-chunks,");
    if (chunks == string::npos)
      continue;
    std::istringstream list(line.substr(chunks + 12));
    string chunk;
    while (std::getline(list, chunk, ',')) {
      size_t offset = 0, size = 0;
      double start = 0, duration = 0;
      if (sscanf(chunk.c_str(), "%zu+%zu:%lf+%lf", &offset, &size, &start, &duration) == 4)
        last_end = std::max(last_end, start + duration);
    }
  }
  return last_end < 0 || first_run > 1e299 ? -1 : (last_end - first_run) * 1e-3;
}

// The host buffers EngineCL reads and writes: one byte vector per buffer argument, owning the
// data the checks read (peers_desc's pointers are redirected to them).
static vector<std::shared_ptr<vector<unsigned char>>> BUFFERS(PEERS_MAX_ARGS);
static float FLOATS[PEERS_MAX_ARGS];
static int INTS[PEERS_MAX_ARGS];

// The packages per device of the last run.
static string LAST_PACKAGES;

// One run; returns {roi, whole run} seconds.
static std::pair<double, double>
run_once(const Setting& s, const string& source, unsigned out_bytes, unsigned out_items)
{
  vector<ecl::Device> devices;
  for (auto& d : s.devices)
    devices.emplace_back(ecl::Device(d.platform, d.device));
  ecl::Runtime runtime(std::move(devices), { D.global, 0, 0 }, D.local, out_bytes, out_items);
  ecl::StaticScheduler st;
  ecl::DynamicScheduler dy;
  if (s.dynamic) {
    runtime.setScheduler(&dy);
    dy.setChunks((size_t)s.chunks);
  } else {
    runtime.setScheduler(&st);
    st.setRawProportions(static_props(s.devices, s.gpu_share));
  }
  for (int i = 0; i < D.nargs; ++i) {
    auto kind = D.args[i].kind;
    if (kind == ARG_WHOLE || kind == ARG_IN)
      runtime.setInBuffer(BUFFERS[i]);
    else if (kind == ARG_OUT)
      runtime.setOutBuffer(BUFFERS[i]);
  }
  runtime.setKernel(source, D.function);
  for (int i = 0; i < D.nargs; ++i) {
    const peers_arg& a = D.args[i];
    if (a.kind == ARG_SCALAR && !strcmp(a.cltype, "float"))
      runtime.setKernelArg((cl_uint)i, FLOATS[i]);
    else if (a.kind == ARG_SCALAR)
      runtime.setKernelArg((cl_uint)i, INTS[i]);
    else if (a.kind == ARG_LOCAL)
      runtime.setKernelArgLocalAlloc((cl_uint)i, (unsigned)a.local_bytes);
    else
      runtime.setKernelArg((cl_uint)i, BUFFERS[i]);
  }
  auto t0 = std::chrono::steady_clock::now();
  runtime.run();
  double whole = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The device threads record a last timestamp after run() returns: let them finish first.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // printStats writes to stdout: captured, to read the timestamps and keep the JSON lines clean.
  std::ostringstream stats;
  auto* old = std::cout.rdbuf(stats.rdbuf());
  runtime.printStats();
  std::cout.rdbuf(old);
  LAST_PACKAGES = packages_from_stats(stats.str());
  return { roi_from_stats(stats.str()), whole };
}

static void
print_line(const Setting& s, const char* size, double roi, double whole, int reps, bool ok, bool cut, const string& detail)
{
  printf("{\"peer\":\"enginecl\",\"setting\":\"%s\",\"kernel\":\"%s\",\"size\":\"%s\","
         "\"roi_seconds\":%.6f,\"run_seconds\":%.6f,\"reps\":%d,\"cut\":%s,\"ok\":%s,\"devices\":%zu,"
         "\"packages_per_device\":[%s],"
         "\"detail\":\"%s\",\"build_options\":\"%s\"}\n",
         s.label.c_str(), D.name, size, roi, whole, reps, cut ? "true" : "false", ok ? "true" : "false", s.devices.size(),
         LAST_PACKAGES.c_str(), detail.c_str(), D.options[0] ? "not passed: EngineCL builds with its own options only" : "");
  fflush(stdout);
}

// Why EngineCL cannot express this kernel as given, or "" when it can.
static string
unsupported(unsigned* out_bytes, unsigned* out_items)
{
  *out_bytes = 0;
  *out_items = 1;
  for (int i = 0; i < D.nargs; ++i) {
    const peers_arg& a = D.args[i];
    if (a.kind == ARG_INOUT)
      return "an in-out buffer: an EngineCL buffer is input (written whole to every device) or "
             "output (read back in slices), never both";
    if (a.kind != ARG_OUT)
      continue;
    // One output pattern for every output buffer, in bytes per work-items.
    unsigned bytes = (unsigned)(a.num * a.elem), items = (unsigned)a.den;
    unsigned g = std::gcd(bytes, items);
    bytes /= g;
    items /= g;
    if (*out_bytes && (bytes != *out_bytes || items != *out_items))
      return "outputs with different patterns: EngineCL has one output pattern per runtime";
    *out_bytes = bytes;
    *out_items = items;
  }
  return "";
}

int
main(int argc, char** argv)
{
  const char *kernels = "kernels", *dev_list = nullptr, *statics = nullptr, *dynamics = nullptr;
  const char* size = "?";
  int reps = 3, warmup = 1;
  double cutoff = 5;
  if (argc < 2) {
    std::cerr << "usage: enginecl-driver DIR [--kernels K] [--devices 0,1] [--static 0.5,1.0] "
                 "[--dynamic 4,16] [--reps R] [--warmup W] [--size LABEL]\n";
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    string f = argv[i];
    const char* v = argv[i + 1];
    if (f == "--kernels") kernels = v;
    else if (f == "--devices") dev_list = v;
    else if (f == "--static") statics = v;
    else if (f == "--dynamic") dynamics = v;
    else if (f == "--reps") reps = atoi(v);
    else if (f == "--warmup") warmup = atoi(v);
    else if (f == "--size") size = v;
    else if (f == "--cutoff") cutoff = atof(v);
    else {
      std::cerr << "enginecl-driver: unknown flag " << f << "\n";
      return 2;
    }
  }
  if (peers_open(argv[1], &D))
    return 2;
  unsigned out_bytes, out_items;
  string why = unsupported(&out_bytes, &out_items);
  if (!why.empty()) {
    printf("{\"peer\":\"enginecl\",\"kernel\":\"%s\",\"size\":\"%s\",\"supported\":false,"
           "\"reason\":\"%s\"}\n", D.name, size, why.c_str());
    return 0;
  }
  for (int i = 0; i < D.nargs; ++i) {
    peers_arg& a = D.args[i];
    if (a.kind == ARG_SCALAR) {
      memcpy(&FLOATS[i], a.scalar, 4);
      memcpy(&INTS[i], a.scalar, 4);
    } else if (a.data) {
      BUFFERS[i] = std::make_shared<vector<unsigned char>>(a.data, a.data + a.elem * a.count);
      free(a.data);
      a.data = BUFFERS[i]->data();
    }
  }
  char* src = peers_source(kernels, &D);
  if (!src)
    return 2;
  string source(src);
  free(src);

  vector<FlatDevice> all = enumerate_devices(), chosen;
  double picks[32];
  int np = dev_list ? peers_list(dev_list, picks, 32) : 0;
  for (int k = 0; k < np; ++k) {
    if ((size_t)picks[k] >= all.size()) {
      std::cerr << "enginecl-driver: no OpenCL device " << picks[k] << "\n";
      return 2;
    }
    chosen.push_back(all[(size_t)picks[k]]);
  }
  if (!dev_list)
    chosen = all;

  vector<Setting> settings;
  double values[32];
  int n = statics ? peers_list(statics, values, 32) : 0;
  for (int k = 0; k < n; ++k) {
    char label[32];
    snprintf(label, sizeof label, "static gpu=%g", values[k]);
    Setting s{ label, chosen, false, values[k], 0 };
    if (values[k] >= 1.0) {
      // The GPUs alone (EngineCL's shares must lie strictly between 0 and 1).
      bool any_gpu = std::any_of(chosen.begin(), chosen.end(), [](const FlatDevice& d) { return d.gpu; });
      vector<FlatDevice> fast;
      for (size_t i = 0; i < chosen.size(); ++i)
        if (any_gpu ? chosen[i].gpu : i > 0)
          fast.push_back(chosen[i]);
      s.devices = fast;
      s.gpu_share = 1.0;
    }
    size_t nfast = 0;
    bool any_gpu = std::any_of(chosen.begin(), chosen.end(), [](const FlatDevice& d) { return d.gpu; });
    for (size_t i = 0; i < chosen.size(); ++i)
      nfast += any_gpu ? chosen[i].gpu : i > 0;
    if (nfast == 0 || (values[k] < 1.0 && nfast == chosen.size())) {
      std::cerr << "enginecl-driver: " << s.label << " needs a device in each group; skipped\n";
      continue;
    }
    // EngineCL's Static rounds each share down to whole work-groups, and a device left with
    // none crashes it (its empty-package path passes the wrong pointer to its callback).
    bool empty = false;
    size_t given = 0;
    for (float prop : static_props(s.devices, s.gpu_share)) {
      size_t items = D.local * ((size_t)(prop * (float)D.global) / D.local);
      empty = empty || items == 0;
      given += items;
    }
    if (empty || given >= D.global) {
      std::cerr << "enginecl-driver: " << s.label << " leaves a device no work-group; skipped\n";
      continue;
    }
    settings.push_back(s);
  }
  n = dynamics ? peers_list(dynamics, values, 32) : 0;
  for (int k = 0; k < n; ++k) {
    // Every chunk holds at least one work-group (EngineCL's chunk size would be 0).
    if (values[k] < 1 || (size_t)values[k] > D.global / D.local) {
      std::cerr << "enginecl-driver: " << values[k] << " chunks of " << D.global / D.local
                << " work-groups; skipped\n";
      continue;
    }
    settings.push_back({ "dynamic chunks=" + std::to_string((int)values[k]), chosen, true, 0, (int)values[k] });
  }

  bool all_ok = true;
  double best = -1;
  for (auto& s : settings) {
    vector<double> rois, wholes;
    bool ok = true, cut = false;
    char detail[256] = "";
    for (int r = 0; r < warmup + reps; ++r) {
      std::pair<double, double> t{ -1, -1 };
      bool good = false;
      try {
        if (peers_prepare(&D) == 0) {
          t = run_once(s, source, out_bytes, out_items);
          good = t.first >= 0 && peers_verify(&D, detail, sizeof detail);
        }
      } catch (std::exception& e) {
        snprintf(detail, sizeof detail, "EngineCL: %s", e.what());
      }
      // A setting far slower than the best so far (a slow device handed a large share) is not
      // repeated: its first run stands as its time.
      cut = r == 0 && best > 0 && t.first > cutoff * best;
      if (r >= warmup || cut) {
        rois.push_back(t.first);
        wholes.push_back(t.second);
        ok = ok && good;
      }
      if (cut)
        break;
    }
    if (rois.empty())
      continue;
    double roi = peers_median(rois.data(), (int)rois.size());
    double whole = peers_median(wholes.data(), (int)wholes.size());
    if (ok && roi > 0 && (best < 0 || roi < best))
      best = roi;
    print_line(s, size, roi, whole, (int)rois.size(), ok, cut, detail);
    all_ok = all_ok && ok;
  }
  return all_ok ? 0 : 1;
}
