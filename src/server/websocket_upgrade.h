// Serving a WebSocket from a cpp-httplib handler. cpp-httplib 0.11 has no upgrade: the handler
// finds its request's connection in the process's descriptor table (as the connection watchdog
// does), answers the handshake on it and serves the WebSocket in the handler's own thread until it
// closes; then it shuts the connection down, so that what httplib writes after the handler goes
// nowhere. On a TLS listener the WebSocket rides on the TLS session httplib made (its bytes relayed
// by ws::TlsRelay while the handler serves it).
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>

#include "common/websocket.h"

namespace hpc::cp {

// Answers 400 when the request is no WebSocket upgrade, 403 when a browser's Origin names another
// site than the request's Host (a page elsewhere opening a socket with the user's cookie); true
// when neither.
bool CheckUpgrade(const httplib::Request& req, httplib::Response& res);

// Answers the handshake and serves the connection until it closes. `opened` gets the connection
// before the first message is read. Answers 400/500 itself and returns false when the connection
// could not be taken over.
bool ServeWebSocket(const httplib::Request& req, httplib::Response& res, ws::Connection::OnMessage on_message,
                    ws::Connection::OnClosed on_closed,
                    const std::function<void(std::shared_ptr<ws::Connection>)>& opened);

}  // namespace hpc::cp
