#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/client.h"
#include "cli/command_support.h"
#include "cli/identity_commands.h"
#include "cli/metric_commands.h"
#include "cli/table.h"
#include "codec/job_codec.h"
#include "codec/queue_codec.h"

namespace ty {
namespace {

std::string jobPath(const Globals& g, const std::string& id) {
  for (char c : id) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      usageError(g, "JOB", "job ids are numbers such as 42 (got \"" + id + "\")");
    }
  }
  return "/api/v1/jobs/" + id;
}

std::string gpusOf(const Json& job) {
  const Json& r = job["spec"]["resources"];
  std::string g = r.contains("gpus")
                      ? (r["gpus"].is_string() ? r["gpus"].get<std::string>() : r["gpus"].dump())
                      : "0";
  int replicas = job["spec"].value("replicas", 1);
  return replicas > 1 ? std::to_string(replicas) + "x" + g : g;
}

// "2" for 2.0, "0.5" for 0.5.
std::string number(const Json& v) {
  if (!v.is_number()) return "-";
  double d = v.get<double>();
  std::ostringstream out;
  out << d;
  return out.str();
}

// "in 12m (14:05:00)" from a waiting object's estimated start; "unknown"
// when no running job's limit bounds it.
std::string startEstimate(const Json& waiting) {
  if (!waiting.contains("estimated_start") || waiting["estimated_start"].is_null()) {
    return "unknown";
  }
  std::int64_t eta = waiting["estimated_start"].get<std::int64_t>();
  std::int64_t now = nowMs();
  if (eta <= now) return "now";
  return "in " + ago(eta, now) + " (" + formatTimestamp(eta) + ")";
}

void addSubmit(CLI::App& app, std::shared_ptr<Globals> g) {
  struct Opts {
    std::string file, name, project, queue, image, memory, script, max_runtime, min_runtime;
    std::string gpu_type, workdir, same_label;
    std::vector<std::string> node_selector;
    std::string idempotency_key;
    std::string gpus, cpus;
    int replicas = 0;
    int priority = 0;
    bool priority_set = false;
    std::vector<std::string> env;
    std::vector<std::string> command;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Submit a job: trainyard submit --gpus 2 -- python3 train.py");
  cmd->add_option("-f,--file", o->file, "Job spec file (YAML or JSON)")->check(CLI::ExistingFile);
  cmd->add_option("--name", o->name, "Job name");
  cmd->add_option("--project", o->project, "Project (default: default)");
  cmd->add_option("--queue", o->queue, "Queue (default: the project's queue)");
  cmd->add_option("--gpus", o->gpus, "GPUs per replica");
  cmd->add_option("--gpu-type", o->gpu_type, "GPU model, e.g. A100 (any of a comma list)");
  cmd->add_option("--cpus", o->cpus, "CPUs per replica");
  cmd->add_option("--memory", o->memory, "Memory per replica, e.g. 16Gi");
  cmd->add_option("--image", o->image, "Run in this container image");
  cmd->add_option("--replicas", o->replicas, "Processes of the job, each with its own RANK");
  auto* prio = cmd->add_option("--priority", o->priority, "Higher runs first");
  cmd->add_option("--max-runtime", o->max_runtime,
                  "Kill after this long, e.g. 2h; also lets it start early by backfill");
  cmd->add_option("--min-runtime", o->min_runtime,
                  "Not preempted before it ran this long, e.g. 30m");
  cmd->add_option("--node-selector", o->node_selector, "Node label K=V (repeatable)");
  cmd->add_option("--same-label", o->same_label,
                  "Replicas on nodes sharing this label's value, e.g. rack");
  cmd->add_option("--workdir", o->workdir, "Working directory (absolute)");
  cmd->add_option("--script", o->script, "Shell text run by /bin/sh -c instead of a command");
  cmd->add_option("-e,--env", o->env, "Environment variable K=V (repeatable)");
  cmd->add_option("--idempotency-key", o->idempotency_key,
                  "Makes the submission safe to resend: the same key returns the same job");
  cmd->add_option("command", o->command, "Program and arguments, after --");
  cmd->callback([g, o, prio] {
    std::ostream& out = *g->io.out;
    Json spec = Json::object();
    if (!o->file.empty()) {
      std::ifstream in(o->file);
      std::stringstream text;
      text << in.rdbuf();
      spec = orFail(*g, parseBody(text.str(), /*yaml=*/true));
      if (!spec.is_object()) fail(*g, Status::invalidArgument("must hold a job spec map", o->file));
    }
    if (!o->name.empty()) spec["name"] = o->name;
    if (!o->project.empty()) spec["project"] = o->project;
    if (!o->image.empty()) spec["image"] = o->image;
    if (!o->workdir.empty()) spec["workdir"] = o->workdir;
    if (!o->queue.empty()) spec["queue"] = o->queue;
    if (!o->max_runtime.empty()) spec["max_runtime"] = o->max_runtime;
    if (!o->min_runtime.empty()) spec["min_runtime"] = o->min_runtime;
    if (!o->same_label.empty()) spec["same_label"] = o->same_label;
    for (const auto& kv : o->node_selector) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        fail(*g, Status::invalidArgument("must be LABEL=value (got \"" + kv + "\")",
                                         "--node-selector"));
      }
      spec["node_selector"][kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (!o->script.empty()) spec["script"] = o->script;
    if (!o->command.empty()) spec["command"] = o->command;
    if (o->replicas > 0) spec["replicas"] = o->replicas;
    if (prio->count() > 0) spec["priority"] = o->priority;
    auto& res = spec["resources"];
    if (res.is_null()) res = Json::object();
    if (!o->gpus.empty()) res["gpus"] = o->gpus;
    if (!o->cpus.empty()) res["cpus"] = o->cpus;
    if (!o->memory.empty()) res["memory"] = o->memory;
    if (!o->gpu_type.empty()) {
      Json types = Json::array();
      std::stringstream ss(o->gpu_type);
      for (std::string t; std::getline(ss, t, ',');) types.push_back(t);
      res["gpu_type"] = types;
    }
    for (const auto& kv : o->env) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        fail(*g, Status::invalidArgument("must be NAME=value (got \"" + kv + "\")", "--env"));
      }
      spec["env"][kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (!spec.contains("command") && !spec.contains("script")) {
      usageError(*g, "command",
                 "nothing to run: give a command after -- (trainyard submit -- python3 "
                 "train.py), --script, or -f job.yaml");
    }
    auto client = connect(*g);
    std::map<std::string, std::string> headers;
    if (!o->idempotency_key.empty()) headers["Idempotency-Key"] = o->idempotency_key;
    Json job = orFail(*g, client->post("/api/v1/jobs", spec.dump(), "application/json", headers));
    if (printStructured(*g, job)) return;
    out << "Submitted job " << job["id"].get<std::int64_t>() << " (" << str(job, "name") << "), "
        << str(job, "state") << "\n";
  });
}

void addJobs(CLI::App& app, std::shared_ptr<Globals> g) {
  struct Opts {
    std::string state, project, user;
    int limit = 50;
    bool all = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("jobs", "List jobs, newest first");
  cmd->add_option("--state", o->state, "Only jobs in this state");
  cmd->add_option("--project", o->project, "Only this project");
  cmd->add_option("--user", o->user, "Only this user's jobs");
  cmd->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  cmd->callback([g, o] {
    std::ostream& out = *g->io.out;
    std::string q = "/api/v1/jobs?limit=" + std::to_string(o->limit);
    auto add = [&](const char* k, const std::string& v) {
      if (!v.empty()) q += std::string("&") + k + "=" + queryEncode(v);
    };
    add("state", o->state);
    add("project", o->project);
    add("user", o->user);
    auto client = connect(*g);
    Json page = orFail(*g, client->get(q));
    if (printStructured(*g, page)) return;
    Table t({"ID", "NAME", "PROJECT", "USER", "STATE", "GPUS", "AGE", "REASON"});
    std::int64_t now = nowMs();
    for (const auto& j : page["jobs"]) {
      std::string reason = str(j, "reason");
      if (reason.size() > 60) reason = reason.substr(0, 57) + "...";
      t.add({str(j, "id"), str(j, "name"), str(j, "project"), str(j, "user"), str(j, "state"),
             gpusOf(j), ago(now, j.value("created_at", std::int64_t{0})), reason});
    }
    t.print(out);
  });
}

void addDescribe(CLI::App& app, std::shared_ptr<Globals> g) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("describe", "A job's spec, state, placement and events");
  cmd->add_option("JOB", *id, "Job id")->required();
  cmd->callback([g, id] {
    std::ostream& out = *g->io.out;
    auto client = connect(*g);
    Json job = orFail(*g, client->get(jobPath(*g, *id)));
    Json events = orFail(*g, client->get(jobPath(*g, *id) + "/events"));
    if (g->output != "table") {
      job["events"] = events["events"];
      printStructured(*g, job);
      return;
    }
    const Json& spec = job["spec"];
    out << "Job:        " << str(job, "id") << " (" << str(job, "name") << ")\n"
        << "Project:    " << str(job, "project") << "\n"
        << "User:       " << str(job, "user") << "\n"
        << "State:      " << str(job, "state") << "\n";
    if (!str(job, "reason").empty() && str(job, "reason") != "-") {
      out << "Reason:     " << str(job, "reason") << "\n";
    }
    if (job.contains("waiting")) {
      const Json& w = job["waiting"];
      out << "Queue:      " << str(w, "queue") << ", position " << w["position"] << "\n";
      out << "Starts:     " << startEstimate(w) << "\n";
    }
    if (spec.contains("command")) {
      std::string cmdline;
      for (const auto& a : spec["command"])
        cmdline += (cmdline.empty() ? "" : " ") + a.get<std::string>();
      out << "Command:    " << cmdline << "\n";
    } else {
      out << "Script:     " << str(spec, "script") << "\n";
    }
    if (spec.contains("image")) out << "Image:      " << str(spec, "image") << "\n";
    out << "Resources:  " << gpusOf(job) << " GPU(s)";
    const Json& r = spec["resources"];
    if (r.contains("cpus")) out << ", " << str(r, "cpus") << " CPUs";
    if (r.contains("memory")) out << ", " << str(r, "memory") << " memory";
    out << "\nPriority:   " << str(spec, "priority") << "\n";
    out << "Attempts:   " << str(job, "attempts") << "\n";
    if (job.contains("attempt")) {
      const Json& a = job["attempt"];
      int i = 0;
      for (const auto& rep : a["replicas"]) {
        std::string gpus;
        for (const auto& x : rep["gpus"]) gpus += (gpus.empty() ? "" : ",") + x.dump();
        out << "Placement:  replica " << i << " on " << rep["node"].get<std::string>()
            << (gpus.empty() ? "" : ", GPUs " + gpus);
        if (i < static_cast<int>(a["pids"].size()) && a["pids"][i].get<std::int64_t>() > 0) {
          out << ", pid " << a["pids"][i];
        }
        out << "\n";
        ++i;
      }
    }
    if (!job["exit_code"].is_null()) out << "Exit code:  " << job["exit_code"] << "\n";
    out << "\nEvents:\n";
    Table t({"  TIME", "REASON", "MESSAGE"});
    for (const auto& e : events["events"]) {
      t.add({"  " + formatTimestamp(e["time"].get<std::int64_t>()), str(e, "reason"),
             str(e, "message")});
    }
    t.print(out);
  });
}

void addLogs(CLI::App& app, std::shared_ptr<Globals> g) {
  struct Opts {
    std::string id;
    bool follow = false;
    int tail = -1;
    int replica = 0;
    int attempt = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("logs", "A job's output (stdout and stderr)");
  cmd->add_option("JOB", o->id, "Job id")->required();
  cmd->add_flag("-f,--follow", o->follow, "Keep streaming until the job ends");
  cmd->add_option("--tail", o->tail, "Only the last N lines")->check(CLI::NonNegativeNumber);
  cmd->add_option("--replica", o->replica, "Replica index")->check(CLI::NonNegativeNumber);
  cmd->add_option("--attempt", o->attempt, "Attempt number (default: latest)")
      ->check(CLI::PositiveNumber);
  cmd->callback([g, o] {
    std::ostream& out = *g->io.out;
    std::string q = jobPath(*g, o->id) + "/logs?replica=" + std::to_string(o->replica);
    if (o->follow) q += "&follow=true";
    if (o->tail >= 0) q += "&tail=" + std::to_string(o->tail);
    if (o->attempt > 0) q += "&attempt=" + std::to_string(o->attempt);
    auto client = connect(*g);
    Status st = client->stream(q, [&out](const char* d, size_t n) {
      out.write(d, static_cast<std::streamsize>(n));
      out.flush();
    });
    if (!st.isOk()) fail(*g, st);
  });
}

void addCancel(CLI::App& app, std::shared_ptr<Globals> g) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("cancel", "Cancel a job (SIGTERM, then SIGKILL after its grace period)");
  cmd->add_option("JOB", *id, "Job id")->required();
  cmd->callback([g, id] {
    std::ostream& out = *g->io.out;
    auto client = connect(*g);
    Json job = orFail(*g, client->post(jobPath(*g, *id) + "/cancel", ""));
    if (printStructured(*g, job)) return;
    out << "Job " << str(job, "id") << ": "
        << (str(job, "state") == "cancelled" ? "cancelled"
                                             : "cancel requested (" + str(job, "reason") + ")")
        << "\n";
  });
}

// `queue set NAME -f FILE` and `queue delete NAME` (global admins): the
// file holds one queue as in the config file's scheduler.queues, with or
// without its name.
void addQueueChanges(CLI::App* queue, const std::shared_ptr<Globals>& g) {
  struct Opts {
    std::string name, file;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* set = queue->add_subcommand(
      "set",
      "Create a queue or replace its whole config from a file (global admins); in force from "
      "the next scheduling pass");
  set->add_option("NAME", o->name, "Queue name: 1-64 of a-z 0-9 . _ -")->required();
  set->add_option("-f,--file", o->file,
                  "The queue as in the config file's scheduler.queues (YAML or JSON); - reads "
                  "stdin")
      ->required();
  set->callback([g, o] {
    std::string text;
    if (o->file == "-") {
      std::stringstream in;
      in << g->io.in->rdbuf();
      text = in.str();
    } else {
      std::ifstream in(o->file);
      if (!in) usageError(*g, "--file", "cannot read " + o->file);
      std::stringstream buf;
      buf << in.rdbuf();
      text = buf.str();
    }
    // Parsed here so that YAML goes out as JSON and a file that is not a
    // map is refused before asking the server; the server checks the rest
    // and names the field at fault.
    Json body = orFail(*g, parseBody(text, /*yaml=*/true));
    if (!body.is_object()) {
      fail(*g, Status::invalidArgument("must hold one queue: a map such as {quota: {gpu: "
                                       "{nominal: 8}}}",
                                       o->file));
    }
    auto client = connect(*g);
    Json stored = orFail(*g, client->put("/api/v1/queues/" + queryEncode(o->name), body.dump()));
    if (printStructured(*g, stored)) return;
    std::ostream& out = *g->io.out;
    // The answer is the queue's form plus the note.
    Json shape = stored;
    if (shape.is_object()) shape.erase("note");
    QueueConfig q;
    if (readQueue(shape, "", q, "queue").isOk()) {
      out << "set queue " << q.name << ": " << describeQuotas(q) << "\n";
    } else {
      out << "set queue " << o->name << "\n";
    }
    if (stored.contains("note") && stored["note"].is_string()) {
      out << "note: " << stored["note"].get<std::string>() << "\n";
    }
  });

  auto delete_name = std::make_shared<std::string>();
  CLI::App* del = queue->add_subcommand(
      "delete", "Delete a queue (global admins; refused while it has pending or running jobs)");
  del->add_option("NAME", *delete_name, "Queue name")->required();
  del->callback([g, delete_name] {
    auto client = connect(*g);
    orFail(*g, client->del("/api/v1/queues/" + queryEncode(*delete_name)));
    if (g->output == "table") *g->io.out << "deleted queue " << *delete_name << "\n";
  });
}

void addQueue(CLI::App& app, std::shared_ptr<Globals> g) {
  auto only = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "queue", "Queues with quota and usage, then waiting jobs in the order they will start");
  cmd->add_option("QUEUE", *only, "Only this queue");
  cmd->callback([g, only, cmd] {
    if (!cmd->get_subcommands().empty()) return;
    std::ostream& out = *g->io.out;
    auto client = connect(*g);
    Json queues = orFail(*g, client->get("/api/v1/queues"));
    Json pending = orFail(*g, client->get("/api/v1/jobs?state=pending&limit=1000"));
    std::vector<Json> waiting;
    for (const auto& j : pending["jobs"]) {
      if (!j.contains("waiting")) continue;
      if (!only->empty() && str(j["waiting"], "queue") != *only) continue;
      waiting.push_back(j);
    }
    std::stable_sort(waiting.begin(), waiting.end(), [](const Json& a, const Json& b) {
      const Json& wa = a["waiting"];
      const Json& wb = b["waiting"];
      if (str(wa, "queue") != str(wb, "queue")) return str(wa, "queue") < str(wb, "queue");
      return wa.value("position", 0) < wb.value("position", 0);
    });
    if (g->output != "table") {
      Json structured = {{"queues", Json::array()}, {"waiting", waiting}};
      for (const auto& q : queues["queues"]) {
        if (only->empty() || str(q, "name") == *only) structured["queues"].push_back(q);
      }
      printStructured(*g, structured);
      return;
    }
    Table qt({"QUEUE", "COHORT", "WEIGHT", "RESOURCE", "USED", "NOMINAL", "BORROW LIMIT", "RUNNING",
              "PENDING"});
    for (const auto& q : queues["queues"]) {
      if (!only->empty() && str(q, "name") != *only) continue;
      bool first = true;
      for (const auto& r : q["resources"]) {
        qt.add({first ? str(q, "name") : "", first ? str(q, "cohort") : "",
                first ? number(q["weight"]) : "", str(r, "name"), str(r, "used"), str(r, "nominal"),
                r["borrowing_limit"].is_null() ? "none" : str(r, "borrowing_limit"),
                first ? str(q, "running") : "", first ? str(q, "pending") : ""});
        first = false;
      }
      if (first) {
        qt.add({str(q, "name"), str(q, "cohort"), number(q["weight"]), "-", "-", "-", "-",
                str(q, "running"), str(q, "pending")});
      }
    }
    qt.print(out);
    out << "\n";
    Table t({"QUEUE", "POS", "ID", "NAME", "USER", "PRIO", "GPUS", "STARTS", "REASON"});
    for (const auto& j : waiting) {
      const Json& w = j["waiting"];
      t.add({str(w, "queue"), str(w, "position"), str(j, "id"), str(j, "name"), str(j, "user"),
             str(j["spec"], "priority"), gpusOf(j), startEstimate(w), str(w, "message")});
    }
    if (waiting.empty()) {
      out << "No jobs are waiting.\n";
    } else {
      t.print(out);
    }
  });
  addQueueChanges(cmd, g);
}

void addNodes(CLI::App& app, std::shared_ptr<Globals> g) {
  CLI::App* cmd = app.add_subcommand("nodes", "Nodes, their GPUs, and which job holds each");
  cmd->callback([g] {
    std::ostream& out = *g->io.out;
    auto client = connect(*g);
    Json nodes = orFail(*g, client->get("/api/v1/nodes"));
    if (printStructured(*g, nodes)) return;
    Table t({"NODE", "GPU", "MODEL", "MEMORY", "UUID", "JOB"});
    for (const auto& n : nodes["nodes"]) {
      if (n["gpus"].empty()) t.add({str(n, "name"), "-", "(no GPUs)", "", "", ""});
      for (const auto& gpu : n["gpus"]) {
        // An unhealthy GPU takes no new jobs; one already on it keeps running,
        // so both are shown.
        std::string job = str(gpu, "job");
        if (gpu.value("healthy", true)) {
          t.add({str(n, "name"), str(gpu, "index"), str(gpu, "model"), str(gpu, "memory"),
                 str(gpu, "uuid"), job});
          continue;
        }
        std::string sick = "unhealthy: " + gpu.value("unhealthy_reason", std::string("unknown"));
        t.add({str(n, "name"), str(gpu, "index"), str(gpu, "model"), str(gpu, "memory"),
               str(gpu, "uuid"), job == "-" ? sick : job + " (" + sick + ")"});
      }
    }
    t.print(out);
  });
}

}  // namespace

void addClientCommands(CLI::App& app, CliIo io) {
  auto g = std::make_shared<Globals>();
  g->io = std::move(io);
  app.add_option("--server", g->server,
                 "Server URL (default $TRAINYARD_SERVER, else the one given to `trainyard "
                 "login`, else http://127.0.0.1:8080)");
  app.add_option("--ca-cert", g->ca_cert,
                 "PEM file of the CA that signed an https:// server's certificate (default "
                 "$TRAINYARD_CA_CERT, else the one given to `trainyard login`)");
  app.add_option("-o,--output", g->output, "Output: table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  addSubmit(app, g);
  addJobs(app, g);
  addDescribe(app, g);
  addLogs(app, g);
  addCancel(app, g);
  addNodes(app, g);
  addQueue(app, g);
  addIdentityCommands(app, g);
  addMetricCommands(app, g);
}

void addClientCommands(CLI::App& app) { addClientCommands(app, processIo()); }

namespace {

// Thrown by the test CliIo's exit hook to unwind out of a failed command.
struct CommandExit {
  int code;
};

}  // namespace

int runClientCommand(const std::vector<std::string>& args, CliIo io) {
  io.exit = [](int code) { throw CommandExit{code}; };
  std::ostream& out = *io.out;
  std::ostream& err = *io.err;
  CLI::App app{"trainyard"};
  app.require_subcommand(1);
  addClientCommands(app, std::move(io));
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? 0 : 2;
  } catch (const CommandExit& e) {
    return e.code;
  }
  return 0;
}

}  // namespace ty
