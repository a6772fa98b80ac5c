// The fixture of the tests that talk HTTP to a real ApiServer over a real
// JobService (in-memory store, fake executor, clock moved by hand): starts
// the server on 127.0.0.1 port 0, waits until it answers, stops it after
// the test, and makes users and tokens straight in the store.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "api/api_server.h"
#include "auth/tokens.h"
#include "server/job_service_test_fixture.h"

namespace ty::test {

class ApiServerTest : public JobServiceTest {
 protected:
  void TearDown() override {
    if (api_) {
      api_->stop();
      thread_.join();
    }
    JobServiceTest::TearDown();
  }

  // Starts the API with `o` (cheapest password hashing) and waits until it
  // answers: a stop() before the server runs would be lost. Run files (logs)
  // are read under `layout`.
  void startApi(ApiOptions o = {}, RunLayout layout = RunLayout("/nonexistent")) {
    o.gateway.password_params = auth::PasswordParams::minimal();
    api_ = std::make_unique<ApiServer>(*store_, *service_, std::move(layout), clock_, o);
    auto port = api_->bind("127.0.0.1", 0);
    ASSERT_TRUE(port.isOk()) << port.status().toString();
    port_ = *port;
    thread_ = std::thread([this] { api_->serve(); });
    ASSERT_TRUE(eventually([this] {
      httplib::Client http("127.0.0.1", port_);
      auto res = http.Get("/healthz");
      return res && res->status == 200;
    }));
  }

  // Stores user `name` (with password "pw-<name>" when `password`).
  void addUser(const std::string& name, bool admin, bool password = false) {
    User u;
    u.name = name;
    u.is_admin = admin;
    u.created_at = 1;
    if (password) {
      u.password_hash = auth::hashPassword("pw-" + name, auth::PasswordParams::minimal()).value();
    }
    ASSERT_TRUE(store_->createUser(u).isOk());
  }
  // A new live token of `user`; returns its secret.
  std::string issue(const std::string& user) {
    std::string secret = auth::newToken();
    ApiToken t;
    t.user = user;
    t.name = "test";
    t.hash = auth::tokenHash(secret);
    t.prefix = auth::displayPrefix(secret);
    t.created_at = 1;
    EXPECT_TRUE(store_->createToken(t).isOk());
    return secret;
  }
  std::unique_ptr<ApiServer> api_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace ty::test
