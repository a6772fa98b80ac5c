#include "core/queue.h"

#include <algorithm>

#include "common/quantity.h"
#include "common/units.h"

namespace ty {

Quota Quota::units(std::int64_t nominal, std::optional<std::int64_t> borrowing,
                   std::optional<std::int64_t> lending) {
  Quota q;
  q.nominal = nominal * 1000;
  if (borrowing) q.borrowing_limit = *borrowing * 1000;
  if (lending) q.lending_limit = *lending * 1000;
  return q;
}

QuotaLedger::QuotaLedger(const std::vector<QueueConfig>& queues) {
  for (const auto& c : queues) {
    Entry e;
    e.config = c;
    // A NUL cannot appear in a configured name, so private pools never
    // collide with a cohort.
    e.pool_key = c.cohort.empty() ? std::string("\0queue:", 7) + c.name : c.cohort;
    for (const auto& [res, q] : c.quotas) {
      Slot s;
      s.quota = q;
      std::int64_t lendable = q.nominal;
      if (q.lending_limit) lendable = std::clamp<std::int64_t>(*q.lending_limit, 0, q.nominal);
      s.guaranteed = q.nominal - lendable;
      e.slots[res] = s;
      pools_[e.pool_key][res].capacity += lendable;
      if (std::find(resources_.begin(), resources_.end(), res) == resources_.end()) {
        resources_.push_back(res);
        if (res.rfind("gpu:", 0) == 0) model_keys_.push_back(res.substr(4));
      }
    }
    by_name_[c.name] = static_cast<int>(queues_.size());
    queues_.push_back(std::move(e));
  }
  for (auto& e : queues_) {
    for (auto& [res, s] : e.slots) {
      s.pool = &pools_[e.pool_key][res];
      s.pool->members.push_back(&s);
    }
  }
}

int QuotaLedger::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

const QuotaLedger::Pool* QuotaLedger::pool(const Entry& e, const std::string& resource) const {
  auto p = pools_.find(e.pool_key);
  if (p == pools_.end()) return nullptr;
  auto r = p->second.find(resource);
  return r == p->second.end() ? nullptr : &r->second;
}

void QuotaLedger::change(int queue, const ResourceAmounts& amounts, int sign) {
  if (queue < 0) return;
  Entry& e = queues_[static_cast<size_t>(queue)];
  for (const auto& [res, amount] : amounts) {
    auto it = e.slots.find(res);
    if (it == e.slots.end()) continue;
    Slot& s = it->second;
    Pool& p = *s.pool;
    p.used -= std::max<std::int64_t>(0, s.usage - s.guaranteed);
    s.usage += sign * amount;
    p.used += std::max<std::int64_t>(0, s.usage - s.guaranteed);
  }
}

void QuotaLedger::setClaim(int queue, const ResourceAmounts& claim) {
  if (queue < 0) return;
  for (auto& [res, s] : queues_[static_cast<size_t>(queue)].slots) {
    auto it = claim.find(res);
    s.claim = it == claim.end() ? 0 : std::max<std::int64_t>(0, it->second);
  }
}

void QuotaLedger::addClaim(int queue, const ResourceAmounts& amounts) {
  if (queue < 0) return;
  auto& slots = queues_[static_cast<size_t>(queue)].slots;
  for (const auto& [res, amount] : amounts) {
    auto it = slots.find(res);
    if (it != slots.end()) it->second.claim += std::max<std::int64_t>(0, amount);
  }
}

void QuotaLedger::reduceClaim(int queue, const ResourceAmounts& amounts) {
  if (queue < 0) return;
  auto& slots = queues_[static_cast<size_t>(queue)].slots;
  for (const auto& [res, amount] : amounts) {
    auto it = slots.find(res);
    if (it != slots.end()) it->second.claim = std::max<std::int64_t>(0, it->second.claim - amount);
  }
}

std::int64_t QuotaLedger::claimedFromPool(const Slot& s) {
  if (s.claim <= 0 || s.usage >= s.quota.nominal) return 0;
  const std::int64_t target = std::min(s.quota.nominal, s.usage + s.claim);
  return std::max<std::int64_t>(0, target - s.guaranteed) -
         std::max<std::int64_t>(0, s.usage - s.guaranteed);
}

void QuotaLedger::add(int queue, const ResourceAmounts& amounts) { change(queue, amounts, 1); }
void QuotaLedger::remove(int queue, const ResourceAmounts& amounts) { change(queue, amounts, -1); }

std::int64_t QuotaLedger::usage(int queue, const std::string& resource) const {
  if (queue < 0) return 0;
  const auto& slots = queues_[static_cast<size_t>(queue)].slots;
  auto it = slots.find(resource);
  return it == slots.end() ? 0 : it->second.usage;
}

std::optional<QuotaShortfall> QuotaLedger::check(int queue, const ResourceAmounts& demand) const {
  if (queue < 0) return std::nullopt;
  const Entry& e = queues_[static_cast<size_t>(queue)];
  for (const auto& [res, d] : demand) {
    if (d <= 0) continue;
    auto it = e.slots.find(res);
    if (it == e.slots.end()) continue;
    const Slot& s = it->second;
    const Pool* p = s.pool;
    std::int64_t after = s.usage + d;
    QuotaShortfall out;
    out.resource = res;
    out.demand = d;
    out.usage = s.usage;
    out.nominal = s.quota.nominal;
    out.borrowing_limit = s.quota.borrowing_limit;
    out.cohort_idle = p ? std::max<std::int64_t>(0, p->capacity - p->used) : 0;
    if (s.quota.borrowing_limit && after > s.quota.nominal + *s.quota.borrowing_limit) {
      out.needed = after - (s.quota.nominal + *s.quota.borrowing_limit);
      out.over_borrowing_limit = true;
      return out;
    }
    std::int64_t from_pool = std::max<std::int64_t>(0, after - s.guaranteed) -
                             std::max<std::int64_t>(0, s.usage - s.guaranteed);
    std::int64_t available = out.cohort_idle;
    if (after > s.quota.nominal && p) {
      // Borrowing: what other members below nominal wait for is not lent.
      for (const Slot* m : p->members) {
        if (m != &s) out.cohort_claimed += claimedFromPool(*m);
      }
      out.cohort_claimed = std::min(out.cohort_claimed, out.cohort_idle);
      available -= out.cohort_claimed;
    }
    if (from_pool > available) {
      out.needed = from_pool - available;
      return out;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> QuotaLedger::ceiling(int queue, const std::string& resource) const {
  if (queue < 0) return std::nullopt;
  const Entry& e = queues_[static_cast<size_t>(queue)];
  auto it = e.slots.find(resource);
  if (it == e.slots.end()) return std::nullopt;
  const Quota& q = it->second.quota;
  // All of its own nominal, plus everything the others lend up to its limit.
  std::int64_t borrow = lendableByOthers(queue, resource);
  if (q.borrowing_limit) borrow = std::min(borrow, std::max<std::int64_t>(0, *q.borrowing_limit));
  return q.nominal + borrow;
}

std::int64_t QuotaLedger::lendableByOthers(int queue, const std::string& resource) const {
  if (queue < 0) return 0;
  const Entry& e = queues_[static_cast<size_t>(queue)];
  const Pool* p = pool(e, resource);
  if (!p) return 0;
  // The pool holds every member's lendable quota, this queue's included.
  std::int64_t own = 0;
  if (auto it = e.slots.find(resource); it != e.slots.end()) {
    own = it->second.quota.nominal - it->second.guaranteed;
  }
  return std::max<std::int64_t>(0, p->capacity - own);
}

bool QuotaLedger::borrowing(int queue, const std::string& resource) const {
  if (queue < 0) return false;
  const auto& slots = queues_[static_cast<size_t>(queue)].slots;
  auto it = slots.find(resource);
  return it != slots.end() && it->second.usage > it->second.quota.nominal;
}

bool QuotaLedger::withinNominal(int queue, const ResourceAmounts& demand) const {
  if (queue < 0) return false;
  const auto& slots = queues_[static_cast<size_t>(queue)].slots;
  bool covered = false;
  for (const auto& [res, d] : demand) {
    auto it = slots.find(res);
    if (it == slots.end() || d <= 0) continue;
    covered = true;
    if (it->second.usage + d > it->second.quota.nominal) return false;
  }
  return covered;
}

std::int64_t QuotaLedger::borrowed(int queue, const std::string& resource) const {
  if (queue < 0) return 0;
  const auto& slots = queues_[static_cast<size_t>(queue)].slots;
  auto it = slots.find(resource);
  if (it == slots.end()) return 0;
  return std::max<std::int64_t>(0, it->second.usage - it->second.quota.nominal);
}

std::int64_t QuotaLedger::lent(int queue, const std::string& resource) const {
  if (queue < 0) return 0;
  const auto& slots = queues_[static_cast<size_t>(queue)].slots;
  auto it = slots.find(resource);
  if (it == slots.end()) return 0;
  const Slot* self = &it->second;
  // What a member leaves idle of the quota it may lend.
  auto idle = [](const Slot& s) {
    const std::int64_t lendable = s.quota.nominal - s.guaranteed;
    return std::clamp<std::int64_t>(s.quota.nominal - s.usage, 0, lendable);
  };
  std::int64_t borrowed_total = 0;
  std::int64_t idle_total = 0;
  for (const Slot* m : self->pool->members) {
    borrowed_total += std::max<std::int64_t>(0, m->usage - m->quota.nominal);
    idle_total += idle(*m);
  }
  const std::int64_t own_idle = idle(*self);
  if (own_idle == 0 || borrowed_total == 0) return 0;
  const std::int64_t lent_total = std::min(borrowed_total, idle_total);
  // Shares rounded down; the remainder (fewer units than lenders) goes one
  // unit each to the first lenders, so the shares add up to lent_total.
  // Products are of milli-amounts and bytes: kept in 128 bits.
  auto share = [&](const Slot& m) {
    return static_cast<std::int64_t>(static_cast<__int128>(lent_total) * idle(m) / idle_total);
  };
  std::int64_t remainder = lent_total;
  for (const Slot* m : self->pool->members) remainder -= share(*m);
  std::int64_t out = share(*self);
  for (const Slot* m : self->pool->members) {
    if (remainder == 0) break;
    if (idle(*m) == 0 || share(*m) >= idle(*m)) continue;
    if (m == self) return out + 1;
    --remainder;
  }
  return out;
}

const QueueConfig* jobQueue(const std::vector<QueueConfig>& queues, const std::string& queue,
                            const std::string& project) {
  for (const auto& c : queues) {
    if (c.name == queue) return &c;
  }
  if (project.empty()) return nullptr;
  for (const auto& c : queues) {
    if (c.project == project) return &c;
  }
  return nullptr;
}

std::map<std::string, Timestamp> oldestPendingByQueue(const std::vector<QueueConfig>& queues,
                                                      const std::vector<Job>& jobs) {
  std::map<std::string, Timestamp> out;
  for (const Job& j : jobs) {
    if (j.state != JobState::kPending) continue;
    const QueueConfig* q = jobQueue(queues, j.spec.queue, j.spec.project);
    const std::string& name = q ? q->name : j.spec.queue;
    if (name.empty()) continue;
    auto [it, fresh] = out.try_emplace(name, j.created_at);
    if (!fresh) it->second = std::min(it->second, j.created_at);
  }
  return out;
}

std::string formatAmount(const std::string& resource, std::int64_t amount) {
  if (resource == "memory") return formatMemory(amount);
  return Quantity::fromMilli(amount).toString();
}

std::string resourceNoun(const std::string& resource) {
  if (resource == "gpu") return "GPUs";
  if (resource.rfind("gpu:", 0) == 0) return resource.substr(4) + " GPUs";
  if (resource == "cpu") return "CPUs";
  return resource;
}

std::string describeOwner(const QueueConfig& queue) {
  if (queue.project.empty()) return "queue " + queue.name;
  if (queue.project == queue.name) return "project " + queue.project;
  return "project " + queue.project + " (queue " + queue.name + ")";
}

std::string describeShortfall(const QueueConfig& queue, const QuotaShortfall& s) {
  const std::string noun = resourceNoun(s.resource);
  auto amount = [&](std::int64_t v) { return formatAmount(s.resource, v); };
  std::string out = describeOwner(queue) + " uses " + amount(s.usage) + " of " + amount(s.nominal) +
                    " nominal " + noun;
  std::int64_t borrowed = std::max<std::int64_t>(0, s.usage - s.nominal);
  if (s.borrowing_limit) {
    out += *s.borrowing_limit == 0 ? "; no borrowing allowed"
                                   : "; borrowing " + amount(borrowed) + " of " +
                                         amount(*s.borrowing_limit) + " allowed";
  } else if (!queue.cohort.empty()) {
    out += "; borrowing " + amount(borrowed) + ", cohort " + queue.cohort + " has " +
           amount(s.cohort_idle) + " idle";
    if (s.cohort_claimed > 0) {
      out += " (" + amount(s.cohort_claimed) + " held for queues below their nominal)";
    }
  }
  if (s.over_borrowing_limit) {
    return out + "; needs " + amount(s.demand) + " " + noun + ", waiting for " + amount(s.needed) +
           " of its own to be released";
  }
  return out + "; waiting for " + amount(s.needed) + " " + noun;
}

namespace {

// The spec field that sets a resource's amount per replica.
std::string specField(const std::string& resource) {
  if (resource == "cpu") return "resources.cpus";
  if (resource == "memory") return "resources.memory";
  return "resources.gpus";
}

// "8 A100 GPUs", "1 GPU", "32 CPUs", "64Gi of memory".
std::string amountOf(const std::string& resource, std::int64_t amount) {
  if (resource == "memory") return formatAmount(resource, amount) + " of memory";
  std::string noun = resourceNoun(resource);
  if (amount == 1000 && noun.back() == 's') noun.pop_back();
  return formatAmount(resource, amount) + " " + noun;
}

// GPU quotas are the scarce ones and the ones people ask about: report them
// before CPU and memory when a job is over on several.
int reportRank(const std::string& resource) {
  if (resource.rfind("gpu:", 0) == 0) return 0;
  if (resource == "gpu") return 1;
  if (resource == "cpu") return 2;
  return 3;
}

}  // namespace

Status checkQuotaCeiling(const QuotaLedger& ledger, int queue, const ResourceAmounts& per_replica,
                         int replicas) {
  if (queue < 0) return Status::ok();
  const std::int64_t count = std::max(replicas, 1);
  const std::string* over = nullptr;
  std::int64_t over_ceiling = 0;
  for (const auto& [res, amount] : per_replica) {
    if (amount <= 0) continue;
    auto ceiling = ledger.ceiling(queue, res);
    if (!ceiling || amount * count <= *ceiling) continue;
    if (!over || reportRank(res) < reportRank(*over)) {
      over = &res;
      over_ceiling = *ceiling;
    }
  }
  if (!over) return Status::ok();

  const std::string& res = *over;
  const QueueConfig& config = ledger.config(queue);
  const Quota& quota = config.quotas.at(res);
  const std::int64_t each = per_replica.at(res);
  auto amount = [&](std::int64_t v) { return formatAmount(res, v); };

  // Where the limit comes from, so that the admin knows which knob to turn.
  std::string why = "nominal " + amount(quota.nominal);
  if (config.cohort.empty()) {
    why += ", no cohort to borrow from";
  } else {
    const std::int64_t lendable = ledger.lendableByOthers(queue, res);
    if (quota.borrowing_limit) why += ", borrowing limit " + amount(*quota.borrowing_limit);
    if (!quota.borrowing_limit || *quota.borrowing_limit > lendable) {
      why += ", the rest of cohort " + config.cohort + " can lend " + amount(lendable);
    }
  }

  std::string who = config.project.empty() ? "queue " + config.name : "project " + config.project;
  std::string message = who + " may use at most " + amountOf(res, over_ceiling);
  if (!config.project.empty()) message += " in queue " + config.name;
  message += " (" + why + "); this job asks for " + amount(each * count);
  if (count > 1) message += " (" + std::to_string(count) + " replicas x " + amount(each) + ")";

  // When one replica alone is over the limit, fewer replicas cannot help:
  // point at the amount per replica; otherwise at the gang's size.
  const bool fewer_replicas_help = count > 1 && each <= over_ceiling;
  message += "; reduce " + specField(res) + (fewer_replicas_help ? " or replicas" : "") +
             ", or ask an admin to raise the queue's quota";
  return Status::infeasible(std::move(message), fewer_replicas_help ? "replicas" : specField(res));
}

}  // namespace ty
