#include "systolic/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <systemc>
#include <tlm>

#include <tlm_utils/tlm_quantumkeeper.h>  // needs <systemc> first

namespace systolic {

namespace {

// Quantum keepers of processes that run ahead of the kernel, by process object. Never destroyed,
// so that modules destroyed during static destruction can still unregister.
std::map<const sc_core::sc_object*, const tlm_utils::tlm_quantumkeeper*>& local_times() {
    static auto* m = new std::map<const sc_core::sc_object*, const tlm_utils::tlm_quantumkeeper*>;
    return *m;
}

const sc_core::sc_object* current_process() {
    return sc_core::sc_get_current_process_handle().get_process_object();
}

// The time the calling process sees: kernel time, plus its local offset if it registered one.
sc_core::sc_time local_time_stamp() {
    const auto& m = local_times();
    if (!m.empty()) {
        const auto it = m.find(current_process());
        if (it != m.end()) return it->second->get_current_time();
    }
    return sc_core::sc_time_stamp();
}

// %* in the pattern: the caller's simulation time in seconds, as VCML prints it.
class sim_time_flag : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
        char buf[32];
        const int len = std::snprintf(buf, sizeof buf, "%.9f", local_time_stamp().to_seconds());
        dest.append(buf, buf + len);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<sim_time_flag>();
    }
};

struct log_state {
    std::mutex mutex;
    spdlog::sink_ptr sink;
    spdlog::level::level_enum level = default_log_level;

    log_state() {
        sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<sim_time_flag>('*').set_pattern("[%L %*] %n: %v");
        sink->set_formatter(std::move(formatter));
    }
};

log_state& state() {
    static log_state s;
    return s;
}

}  // namespace

std::shared_ptr<spdlog::logger> get_logger(const std::string& name) {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto existing = spdlog::get(name)) return existing;
    auto logger = std::make_shared<spdlog::logger>(name, s.sink);
    logger->set_level(s.level);
    spdlog::register_logger(logger);
    return logger;
}

void set_log_level(spdlog::level::level_enum level) {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.level = level;
    spdlog::set_level(level);
}

void register_local_time(const tlm_utils::tlm_quantumkeeper* keeper) {
    if (const auto* process = current_process()) local_times()[process] = keeper;
}

void unregister_local_time(const tlm_utils::tlm_quantumkeeper* keeper) {
    auto& m = local_times();
    for (auto it = m.begin(); it != m.end();)
        it = it->second == keeper ? m.erase(it) : std::next(it);
}

std::string txn_to_string(const tlm::tlm_generic_payload& trans) {
    const char* cmd = trans.is_read() ? "READ" : trans.is_write() ? "WRITE" : "IGNORE";
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s 0x%08llx len=%u -> %s", cmd,
                  static_cast<unsigned long long>(trans.get_address()), trans.get_data_length(),
                  trans.get_response_string().c_str());
    return buf;
}

}  // namespace systolic
