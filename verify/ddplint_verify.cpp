// ddplint-verify: runs a plan written by `ddplint verify` and measures, on
// this machine, what each planned finding costs. Usage:
//   ddplint-verify PLAN.json RESULTS.json
// Exit status: 0 measured; 2 bad plan or failure (one line naming it);
// 3 no CUDA device visible (GPU measurements skipped with that reason, the
// CPU ones ran). Multi-rank measurements start one process per rank (this
// executable again, with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set), or run
// under torchrun when it already set WORLD_SIZE (see verify/README.md).
//
// Only ATen and c10d headers are included (not <torch/torch.h>): they compile
// in about 8 s instead of 18 s, and against PyTorch 1.13 (Debian, CPU) and 2.x.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "verify/cuda_driver.hpp"
#include "verify/plan.hpp"

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace dv = ddplint::verify;

namespace {

constexpr int kExitBadPlan = 2;
constexpr int kExitNoCuda = 3;
constexpr std::chrono::seconds kRankTimeout{120};  // every multi-rank run is bounded
constexpr std::chrono::seconds kTotalBudget{480};  // and so is the whole run (ddplint waits at most 600 s)

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool write_json(const std::string& path, const json& j) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  f.flush();  // a full disk shows here, not at open
  bool good = static_cast<bool>(f);
  f.close();
  return good && !f.fail();
}

// A strictly parsed integer environment variable in [lo, hi], or an error naming it.
std::optional<long> env_int(const char* name, long lo, long hi, std::string& error) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    error = std::string(name) + " is not set";
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi) {
    error = std::string(name) + "=" + v + ": must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    return std::nullopt;
  }
  return x;
}

json skipped(const json& m, const std::string& reason) {
  return {{"id", m["id"]}, {"status", "skipped"}, {"reason", reason}};
}
json ok(const json& m, json values) { return {{"id", m["id"]}, {"status", "ok"}, {"values", std::move(values)}}; }

std::int64_t value_of(const json& m, const char* key) { return m[key]["value"].get<std::int64_t>(); }

// CPU cores this process may run on (its affinity mask, as os.sched_getaffinity).
int cpu_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// GPUs this process sees (CUDA_VISIBLE_DEVICES applies), counted by the driver:
// the same call on every PyTorch version.
int visible_gpus() {
  if (!at::hasCUDA()) return 0;
  auto& d = dv::CudaDriver::get();
  int count = 0;
  if (!d.loaded || d.cuDeviceGetCount(&count) != 0) return 0;
  return count;
}

void cuda_sync() {
  auto& d = dv::CudaDriver::get();
  if (d.loaded) d.cuCtxSynchronize();
}

// Makes PyTorch create its context on the current device (lazily created
// otherwise), so that driver calls such as cuMemGetInfo have one to ask.
void ensure_context() {
  at::Tensor t = at::ones({1}, at::TensorOptions().device(at::kCUDA));
  cuda_sync();
}

std::size_t free_gpu_bytes() {
  auto& d = dv::CudaDriver::get();
  std::size_t free = 0, total = 0;
  if (!d.loaded || d.cuMemGetInfo(&free, &total) != 0) return 0;
  return free;
}

// --- single-process measurements ---------------------------------------------------

// DDP101: cores per GPU and the num_workers that leaves one core per rank for the
// training process itself (PyTorch's DataLoader warns past os.sched_getaffinity's count).
json measure_cpu_cores(const json& m, int gpus) {
  int cores = cpu_cores();
  int ranks = std::max(1, gpus);
  int advised = std::max(1, cores / ranks - 1);
  return ok(m, {{"cores", cores}, {"gpus", gpus}, {"cores_per_gpu", static_cast<double>(cores) / ranks},
                {"advised_num_workers", advised}});
}

// DDP102/DDP107: host-to-device copy of the batch's bytes, pageable vs pinned,
// blocking vs non_blocking (the host time of the call). Median of 5 after a warm-up.
json measure_h2d(const json& m) {
  std::int64_t bytes = value_of(m, "bytes");
  std::size_t free = free_gpu_bytes();
  if (free == 0) return skipped(m, "cannot read free GPU memory");
  bytes = std::min<std::int64_t>(bytes, static_cast<std::int64_t>(free / 4));  // never more than a quarter of what is free
  auto cpu = at::TensorOptions().dtype(at::kByte);
  at::Tensor pageable = at::empty({bytes}, cpu).fill_(1);
  at::Tensor pinned = at::empty({bytes}, cpu.pinned_memory(true)).fill_(1);
  at::Tensor device = at::empty({bytes}, cpu.device(at::kCUDA));
  auto time_copy = [&](const at::Tensor& src, bool non_blocking, bool host_only) {
    std::vector<double> t;
    for (int i = 0; i < 6; ++i) {
      cuda_sync();
      auto t0 = Clock::now();
      device.copy_(src, non_blocking);
      if (!host_only) cuda_sync();
      double ms = ms_since(t0);
      if (host_only) cuda_sync();
      if (i > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  // device-to-device copy of the same bytes: checked against what PyTorch reaches (verify/gpu-check.sh)
  at::Tensor device2 = at::empty({bytes}, cpu.device(at::kCUDA));
  double d2d_ms = 0;
  {
    std::vector<double> t;
    for (int i = 0; i < 6; ++i) {
      cuda_sync();
      auto t0 = Clock::now();
      device2.copy_(device);
      cuda_sync();
      if (i > 0) t.push_back(ms_since(t0));
    }
    std::sort(t.begin(), t.end());
    d2d_ms = t[t.size() / 2];
  }
  double pageable_ms = time_copy(pageable, false, false);
  double pinned_ms = time_copy(pinned, false, false);
  double async_host_ms = time_copy(pinned, true, true);
  double gb = static_cast<double>(bytes) / 1e9;
  return ok(m, {{"bytes", bytes}, {"pageable_ms", pageable_ms}, {"pinned_ms", pinned_ms},
                {"pinned_non_blocking_host_ms", async_host_ms}, {"pageable_gbps", gb / (pageable_ms / 1e3)},
                {"pinned_gbps", gb / (pinned_ms / 1e3)}, {"d2d_ms", d2d_ms}, {"d2d_gbps", gb / (d2d_ms / 1e3)}});
}

// Without a GPU: a host-to-host copy of the batch's bytes (at most 1 GiB), the
// staging step every pageable host-to-device transfer goes through (CUDA copies
// pageable memory into a pinned buffer first). Median of 5 after a warm-up.
json measure_host_copy(const json& m) {
  std::int64_t bytes = std::min<std::int64_t>(value_of(m, "bytes"), 1ll << 30);
  auto cpu = at::TensorOptions().dtype(at::kByte);
  at::Tensor src = at::empty({bytes}, cpu).fill_(1), dst = at::empty({bytes}, cpu);
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    auto t0 = Clock::now();
    dst.copy_(src);
    if (i > 0) t.push_back(ms_since(t0));
  }
  std::sort(t.begin(), t.end());
  double ms = t[t.size() / 2];
  return {{"bytes", bytes}, {"host_copy_ms", ms}, {"host_copy_gbps", static_cast<double>(bytes) / 1e9 / (ms / 1e3)}};
}

// A queue of GPU work of about `ms` milliseconds (2048^3 fp32 matmuls), not waited for.
void queue_gpu_work(double ms) {
  at::Tensor a = at::randn({2048, 2048}, at::TensorOptions().device(at::kCUDA));
  cuda_sync();
  auto t0 = Clock::now();
  at::Tensor c = at::matmul(a, a);
  cuda_sync();
  double one = std::max(0.01, ms_since(t0));
  int n = std::clamp(static_cast<int>(ms / one), 1, 10000);
  for (int i = 0; i < n; ++i) c = at::matmul(a, a);
}

// DDP401-DDP405: how long one host-device sync (`.item()`) blocks the CPU
// behind a realistic queue of kernels. Median of 5.
json measure_sync(const json& m) {
  double queued = static_cast<double>(value_of(m, "queued_work_ms"));
  at::Tensor x = at::ones({1}, at::TensorOptions().device(at::kCUDA));
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    queue_gpu_work(queued);
    auto t0 = Clock::now();
    volatile float v = x.sum().item<float>();
    (void)v;
    t.push_back(ms_since(t0) * 1000.0);
  }
  std::sort(t.begin(), t.end());
  return ok(m, {{"stall_us", t[t.size() / 2]}, {"queued_work_ms", queued}});
}

// DDP501/503/504: matmul throughput in fp32, tf32, bf16 and fp16.
json measure_matmul(const json& m) {
  std::int64_t M = value_of(m, "m"), N = value_of(m, "n"), K = value_of(m, "k");
  std::size_t need = static_cast<std::size_t>((M * K + K * N + M * N) * 4);
  if (need * 2 > free_gpu_bytes()) return skipped(m, "not enough free GPU memory for the matmul sizes");
  auto run = [&](at::ScalarType type, bool tf32) {
    at::globalContext().setAllowTF32CuBLAS(tf32);
    auto o = at::TensorOptions().device(at::kCUDA).dtype(type);
    at::Tensor a = at::randn({M, K}, o), b = at::randn({K, N}, o);
    at::Tensor c = at::matmul(a, b);
    cuda_sync();
    int iters = 0;
    auto t0 = Clock::now();
    while (iters < 200 && (iters < 3 || ms_since(t0) < 300)) {
      c = at::matmul(a, b);
      ++iters;
      if (iters % 10 == 0) cuda_sync();
    }
    cuda_sync();
    double ms = ms_since(t0) / iters;
    return std::pair{ms, 2.0 * M * N * K / (ms / 1e3) / 1e12};
  };
  auto [fp32_ms, fp32] = run(at::kFloat, false);
  auto [tf32_ms, tf32] = run(at::kFloat, true);
  auto [bf16_ms, bf16] = run(at::kBFloat16, false);
  auto [fp16_ms, fp16] = run(at::kHalf, false);
  at::globalContext().setAllowTF32CuBLAS(false);
  return ok(m, {{"fp32_tflops", fp32}, {"tf32_tflops", tf32}, {"bf16_tflops", bf16}, {"fp16_tflops", fp16},
                {"fp32_ms", fp32_ms}, {"tf32_ms", tf32_ms}, {"bf16_ms", bf16_ms}, {"fp16_ms", fp16_ms},
                {"m", M}, {"n", N}, {"k", K}});
}

// DDP202/203/211: visible GPUs, their memory, and what one more CUDA context on
// GPU 0 costs (a child process retains GPU 0's primary context; free memory is read before and after).
json measure_devices(const json& m) {
  auto& d = dv::CudaDriver::get();
  if (!d.loaded) return skipped(m, d.error);
  int count = 0;
  d.cuDeviceGetCount(&count);
  json devices = json::array();
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    char name[256] = {0};
    std::size_t total = 0;
    d.cuDeviceGet(&dev, i);
    d.cuDeviceGetName(name, sizeof name, dev);
    d.cuDeviceTotalMem(&total, dev);
    devices.push_back({{"index", i}, {"name", name}, {"memory_mib", static_cast<double>(total) / (1 << 20)}});
  }
  at::Tensor touch = at::ones({1}, at::TensorOptions().device(at::kCUDA));  // our own context on GPU 0 exists
  cuda_sync();
  std::size_t before = free_gpu_bytes();
  int pipefd[2];
  if (::pipe(pipefd) != 0) return skipped(m, "pipe failed");
  // a fresh process (CUDA cannot be used in a child forked after it started): this
  // executable again, in its context-holding mode, reporting on the pipe
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    std::string fd = std::to_string(pipefd[1]);
    ::execl("/proc/self/exe", "ddplint-verify", "--hold-gpu-context", fd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipefd[1]);
  char okc = '0';
  if (::read(pipefd[0], &okc, 1) != 1) okc = '0';
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::size_t during = free_gpu_bytes();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(pipefd[0]);
  double context_mib = okc == '1' && before > during ? static_cast<double>(before - during) / (1 << 20) : 0.0;
  return ok(m, {{"count", count}, {"devices", devices}, {"context_mib", context_mib}});
}

// --- multi-rank measurements --------------------------------------------------------

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (s >= 0) ::close(s);
  return port;
}

// Starts `ranks` copies of this executable as ranks of one job, each writing
// `dir/rankR.json`; waits at most kRankTimeout. Returns rank 0's results or an error.
json launch_ranks(int ranks, const std::string& plan_path, const std::string& id, const std::string& backend,
                  const json& env) {
  char dir[] = "/tmp/ddplint-verify-ranks-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return {{"error", "cannot create a temporary folder"}};
  int port = free_port();
  std::string plan_copy = std::string(dir) + "/plan.json";
  {
    std::ofstream f(plan_copy, std::ios::binary);
    f << slurp(plan_path);
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("DDPLINT_VERIFY_HOST_STORE", "1", 1);  // no launcher hosts a store: rank 0 does
      ::unsetenv("TORCHELASTIC_USE_AGENT_STORE");
      ::setenv("DDPLINT_VERIFY_MEASUREMENT", id.c_str(), 1);
      ::setenv("DDPLINT_VERIFY_BACKEND", backend.c_str(), 1);
      for (auto it = env.begin(); it != env.end(); ++it)
        if (it->is_string()) ::setenv(it.key().c_str(), it->get<std::string>().c_str(), 1);
      std::string out = std::string(dir) + "/rank" + std::to_string(r) + ".json";
      ::execl("/proc/self/exe", "ddplint-verify", plan_copy.c_str(), out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  auto deadline = Clock::now() + kRankTimeout;
  bool failed = false;
  for (pid_t pid : pids) {
    int status = 0;
    for (;;) {
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) break;
      if (Clock::now() > deadline) {
        for (pid_t p : pids) ::kill(p, SIGKILL);
        ::waitpid(pid, &status, 0);
        failed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = true;
  }
  std::string text = slurp(std::string(dir) + "/rank0.json");
  for (int r = 0; r < ranks; ++r) ::unlink((std::string(dir) + "/rank" + std::to_string(r) + ".json").c_str());
  ::unlink(plan_copy.c_str());
  ::rmdir(dir);
  if (failed && text.empty()) return {{"error", "a rank failed or ran past " + std::to_string(kRankTimeout.count()) + " s"}};
  try {
    return json::parse(text);
  } catch (const std::exception&) {
    return {{"error", "rank 0 wrote no results"}};
  }
}

// nccl-tests' formulas: algbw = bytes / time; busbw = algbw * 2(n-1)/n for all-reduce.
// https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
json bandwidths(double bytes, double ms, int ranks) {
  double algbw = bytes / (ms / 1e3) / 1e9;
  return {{"algbw_gbps", algbw}, {"busbw_gbps", algbw * 2.0 * (ranks - 1) / ranks}};
}

// One rank of a multi-rank measurement: all-reduce of the gradient (fp32 and bf16)
// and of one element (latency), with Gloo on CPU tensors or NCCL on this rank's GPU.
int run_rank(const json& plan, const std::string& out_path);

// Under torchrun (WORLD_SIZE set by the launcher, no measurement named): every
// rank runs the plan's all-reduce; rank 0 writes the results in the usual
// format. The other kinds need one process (or, for DDP304, two launches):
// they are reported as skipped with that reason.
int run_under_launcher(const json& plan, const std::string& out_path) {
  int rank = std::atoi(std::getenv("RANK"));
  json out = {{"version", dv::kPlanVersion},
              {"device", {{"cuda", visible_gpus() > 0}, {"gpus", visible_gpus()}, {"launcher", "torchrun"}}},
              {"measurements", json::array()}};
  std::string rank_out = out_path + ".rank" + std::to_string(rank);
  for (const auto& m : plan["measurements"]) {
    if (m["kind"] != "all_reduce") {
      out["measurements"].push_back(skipped(m, "measured by running ddplint-verify without torchrun"));
      continue;
    }
    ::setenv("DDPLINT_VERIFY_MEASUREMENT", m["id"].get<std::string>().c_str(), 1);
    ::setenv("DDPLINT_VERIFY_BACKEND", visible_gpus() > 0 ? "nccl" : "gloo", 1);
    int rc = run_rank(plan, rank_out);
    if (rank != 0) continue;
    std::string text = slurp(rank_out);
    ::unlink(rank_out.c_str());
    json v = text.empty() ? json{{"error", "no result"}} : json::parse(text);
    out["measurements"].push_back(rc != 0 || v.contains("error") ? skipped(m, v.value("error", "the rank failed")) : ok(m, v));
  }
  if (rank == 0 && !write_json(out_path, out)) return 1;
  return 0;
}

int run_rank(const json& plan, const std::string& out_path) {
  int rank = std::atoi(std::getenv("RANK")), world = std::atoi(std::getenv("WORLD_SIZE"));
  const char* local = std::getenv("LOCAL_RANK");
  int local_rank = local ? std::atoi(local) : rank;
  std::string id = std::getenv("DDPLINT_VERIFY_MEASUREMENT") ? std::getenv("DDPLINT_VERIFY_MEASUREMENT") : "all_reduce";
  std::string backend = std::getenv("DDPLINT_VERIFY_BACKEND") ? std::getenv("DDPLINT_VERIFY_BACKEND") : "nccl";
  json m;
  for (const auto& e : plan["measurements"])
    if (e["id"] == id) m = e;
  if (m.is_null()) return kExitBadPlan;
  std::int64_t params = value_of(m, "params");
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(std::atoi(std::getenv("MASTER_PORT") ? std::getenv("MASTER_PORT") : "29500"));
  // torchrun's agent hosts the store when it says so (TORCHELASTIC_USE_AGENT_STORE=True); otherwise rank 0 does
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  bool agent_hosts = agent_store != nullptr && std::string(agent_store) == "True";
  opts.isServer = rank == 0 && (std::getenv("DDPLINT_VERIFY_HOST_STORE") != nullptr || !agent_hosts);
  opts.numWorkers = static_cast<std::size_t>(world);
  opts.waitWorkers = false;
  opts.timeout = std::chrono::seconds(60);
  auto tcp = c10::make_intrusive<c10d::TCPStore>(std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1", opts);
  auto store = c10::make_intrusive<c10d::PrefixStore>("ddplint-verify/" + id, tcp);
  json values = {{"ranks", world}, {"backend", backend}};
  if (backend == "gloo") {
#ifdef USE_C10D_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));  // bounded, not Gloo's 30 min
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    c10d::ProcessGroupGloo pg(store, rank, world, options);
    params = std::min<std::int64_t>(params, 64ll * 1024 * 1024);  // at most 256 MiB of fp32 per rank
    auto time_allreduce = [&](at::Tensor t, int iters) {
      std::vector<at::Tensor> v{t};
      pg.allreduce(v)->wait();  // warm-up
      std::vector<double> ms;
      for (int i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        pg.allreduce(v)->wait();
        ms.push_back(ms_since(t0));
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    double fp32_ms = time_allreduce(at::ones({params}, at::kFloat), 5);
    double small_ms = time_allreduce(at::ones({1}, at::kFloat), 20);
    values["fp32_ms"] = fp32_ms;
    values["small_ms"] = small_ms;
    values["device"] = "cpu";
    values.update(bandwidths(static_cast<double>(params) * 4, fp32_ms, world));
#else
    return kExitBadPlan;
#endif
  } else {
    auto& nccl = dv::Nccl::get();
    if (!nccl.loaded) {
      if (rank == 0) write_json(out_path, {{"error", nccl.error}});
      return 0;
    }
    c10::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
    c10::DeviceGuard guard(device);
    ensure_context();
    dv::Nccl::UniqueId uid{};
    if (rank == 0) {
      nccl.GetUniqueId(&uid);
      store->set("nccl_id", std::vector<std::uint8_t>(uid.internal, uid.internal + sizeof uid.internal));
    } else {
      std::vector<std::uint8_t> got = store->get("nccl_id");
      std::copy_n(got.begin(), std::min(got.size(), sizeof uid.internal), uid.internal);
    }
    void* comm = nullptr;
    if (nccl.CommInitRank(&comm, world, uid, rank) != 0) {
      if (rank == 0) write_json(out_path, {{"error", "ncclCommInitRank failed"}});
      return 0;
    }
    std::size_t cap = free_gpu_bytes() / 4;
    params = std::min<std::int64_t>(params, static_cast<std::int64_t>(cap / 4));
    auto time_allreduce = [&](at::Tensor t, int type, int iters) {
      auto once = [&] {
        nccl.AllReduce(t.data_ptr(), t.data_ptr(), static_cast<std::size_t>(t.numel()), type, dv::Nccl::kSum, comm, nullptr);
      };
      once();
      cuda_sync();
      std::vector<double> ms;
      for (int i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        once();
        cuda_sync();
        ms.push_back(ms_since(t0));
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    auto o = at::TensorOptions().device(device);
    double fp32_ms = time_allreduce(at::ones({params}, o.dtype(at::kFloat)), dv::Nccl::kFloat32, 10);
    double bf16_ms = time_allreduce(at::ones({params}, o.dtype(at::kBFloat16)), dv::Nccl::kBfloat16, 10);
    double small_ms = time_allreduce(at::ones({1}, o.dtype(at::kFloat)), dv::Nccl::kFloat32, 20);
    nccl.CommDestroy(comm);
    values["fp32_ms"] = fp32_ms;
    values["bf16_ms"] = bf16_ms;
    values["small_ms"] = small_ms;
    values["device"] = "cuda";
    values.update(bandwidths(static_cast<double>(params) * 4, fp32_ms, world));
  }
  values["params"] = params;
  if (rank == 0 && !write_json(out_path, values)) return 1;
  return 0;
}

}  // namespace

// `--hold-gpu-context FD`: creates a context on GPU 0 with the driver alone,
// writes '1' (or '0' on failure) to FD, and holds it for 3 s (measure_devices).
int hold_gpu_context(int fd) {
  auto& d = dv::CudaDriver::get();
  int dev = 0;
  void* ctx = nullptr;
  char okc = d.loaded && d.cuDeviceGet(&dev, 0) == 0 && d.cuDevicePrimaryCtxRetain(&ctx, dev) == 0 &&
                     d.cuCtxSetCurrent(ctx) == 0
                 ? '1'
                 : '0';
  if (::write(fd, &okc, 1) != 1) return 1;
  ::sleep(3);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--hold-gpu-context") return hold_gpu_context(std::atoi(argv[2]));
  if (argc != 3) {
    std::fprintf(stderr, "usage: ddplint-verify PLAN.json RESULTS.json\n");
    return kExitBadPlan;
  }
  json plan;
  {
    // plans are a few kilobytes: refuse devices, FIFOs and anything over 16 MiB
    struct stat st {};
    if (::stat(argv[1], &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 16 * 1024 * 1024) {
      std::fprintf(stderr, "ddplint-verify: %s: %s\n", argv[1],
                   ::stat(argv[1], &st) != 0 ? std::strerror(errno) : "not a regular file of at most 16 MiB");
      return kExitBadPlan;
    }
    try {
      plan = json::parse(slurp(argv[1]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ddplint-verify: %s: not JSON: %s\n", argv[1], e.what());
      return kExitBadPlan;
    }
  }
  if (std::string problem = dv::validate_plan(plan); !problem.empty()) {
    std::fprintf(stderr, "ddplint-verify: %s: %s\n", argv[1], problem.c_str());
    return kExitBadPlan;
  }
  try {
    if (std::getenv("WORLD_SIZE") != nullptr && std::getenv("RANK") != nullptr) {
      std::string error;
      auto world = env_int("WORLD_SIZE", 2, 4096, error);
      auto rank = world ? env_int("RANK", 0, *world - 1, error) : std::nullopt;
      auto port = rank ? env_int("MASTER_PORT", 1, 65535, error) : std::nullopt;
      if (!port) {
        std::fprintf(stderr, "ddplint-verify: as a rank: %s (unset RANK and WORLD_SIZE to run outside a launcher)\n",
                     error.c_str());
        return kExitBadPlan;
      }
      if (std::getenv("DDPLINT_VERIFY_MEASUREMENT") == nullptr) {
        int rc = run_under_launcher(plan, argv[2]);
        return rc != 0 ? rc : (visible_gpus() > 0 ? 0 : kExitNoCuda);
      }
      return run_rank(plan, argv[2]);
    }

    int gpus = visible_gpus();
    bool cuda = gpus > 0 && dv::CudaDriver::get().loaded;
    json device = {{"cuda", cuda}, {"gpus", gpus}, {"cpu_cores", cpu_cores()}};
    json out = {{"version", dv::kPlanVersion}, {"device", device}, {"measurements", json::array()}};
    if (cuda) ensure_context();
    const std::string no_cuda = "no CUDA device visible";
    const auto started = Clock::now();
    for (const auto& m : plan["measurements"]) {
      std::string kind = m["kind"];
      if (Clock::now() - started > kTotalBudget) {  // the whole run is bounded, not only each measurement
        out["measurements"].push_back(skipped(m, "the run's time budget (" + std::to_string(kTotalBudget.count()) + " s) was spent"));
        continue;
      }
      int wanted = m.contains("gpus") ? static_cast<int>(m["gpus"]["value"].get<std::int64_t>()) : 0;
      int ranks = wanted > 0 ? std::min(wanted, std::max(gpus, 2)) : gpus;
      json r;
      if (kind == "cpu_cores") {
        r = measure_cpu_cores(m, gpus);
      } else if (kind == "all_reduce" && !cuda) {
        // no GPU: the multi-rank plumbing still runs, with Gloo on CPU tensors (not the GPU cost)
        json v = launch_ranks(2, argv[1], m["id"], "gloo", json::object());
        r = v.contains("error") ? skipped(m, v["error"].get<std::string>()) : ok(m, v);
      } else if (kind == "h2d_copy" && !cuda) {
        r = skipped(m, no_cuda);
        r["values"] = measure_host_copy(m);  // what can be measured without a GPU
      } else if (!cuda) {
        r = skipped(m, no_cuda);
      } else if (kind == "h2d_copy") {
        r = measure_h2d(m);
      } else if (kind == "sync_stall") {
        r = measure_sync(m);
      } else if (kind == "matmul") {
        r = measure_matmul(m);
      } else if (kind == "devices") {
        r = measure_devices(m);
      } else if (ranks < 2) {
        r = skipped(m, "needs 2 GPUs (NCCL cannot put two ranks on one GPU); " + std::to_string(gpus) + " visible");
      } else if (kind == "all_reduce") {
        json v = launch_ranks(ranks, argv[1], m["id"], "nccl", json::object());
        r = v.contains("error") ? skipped(m, v["error"].get<std::string>()) : ok(m, v);
      } else {  // all_reduce_env: two launches, NCCL reads its environment once per process
        json with = launch_ranks(ranks, argv[1], m["id"], "nccl", m["env"]);
        json without = launch_ranks(ranks, argv[1], m["id"], "nccl", json::object());
        if (with.contains("error")) r = skipped(m, with["error"].get<std::string>());
        else if (without.contains("error")) r = skipped(m, without["error"].get<std::string>());
        else r = ok(m, {{"with_env_ms", with["fp32_ms"]}, {"without_env_ms", without["fp32_ms"]}, {"ranks", ranks}});
      }
      out["measurements"].push_back(std::move(r));
    }
    if (!write_json(argv[2], out)) {
      std::fprintf(stderr, "ddplint-verify: %s: cannot write the results\n", argv[2]);
      return kExitBadPlan;
    }
    return cuda ? 0 : kExitNoCuda;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "ddplint-verify: %s\n", e.what_without_backtrace());
    return kExitBadPlan;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddplint-verify: %s\n", e.what());
    return kExitBadPlan;
  }
}
