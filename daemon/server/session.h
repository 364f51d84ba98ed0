// Session: one client connection on the I/O thread — reads bytes, frames them (FrameDecoder), hands one message at
// a time to a worker, and writes replies and notifications through a bounded queue.
//
// Invariants:
//  1. At most one message of a connection is being handled at a time, so a connection's requests are answered in
//     order and its hint state needs no cross-request locking.
//  2. Queued output is bounded (kMaxQueuedBytes): a client that stops reading is disconnected, never waited for.
//     Every change of the queue's byte count is reported to the server, which bounds the total over all sessions
//     (Server::enforceReplyBudget).
//  3. A partial message that stalls for kPartialMessageTimeout, or a connection that sends nothing for
//     kSilentConnectionTimeout after it was accepted, is closed (both configurable per server). Whitespace, which
//     framing skips between messages, is nothing: it neither ends the silence nor restarts its clock.
//  4. End of input from a client that shut down only its sending side is a half-close: what it sent is answered, then
//     the connection closes. A client that closed the whole connection is gone: the session closes at once, and
//     the messages it sent that memqd had not begun are not run (Server::submit's worker job checks closedNow()).
// Thread-safety: every member function runs on the I/O thread, except writeReplyNow and endMessageHere, which the
// worker handling the current message calls. writeMutex_ guards what both threads touch: the write queue, its byte
// count, the write-in-flight flag, and closing (the closed flag and the socket's file descriptor). handling_ says
// whether a message is in hand, and whether the I/O thread wants to hear when it is done (then the worker posts
// finished(); otherwise it may end the message itself, and the I/O thread takes the next one when it arrives).
#pragma once

#include <asio.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/service/client_state.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/framing.h"

namespace memq {

class Server;

class Session : public std::enable_shared_from_this<Session> {
 public:
  static constexpr size_t kMaxQueuedBytes = 16u << 20;
  static constexpr size_t kMaxBuffersPerWrite = 64;  // queued messages gathered into one write (IOV_MAX is 1024)
  static constexpr auto kPartialMessageTimeout = std::chrono::seconds(10);
  static constexpr auto kSilentConnectionTimeout = std::chrono::seconds(60);

  // The two timeouts default to the constants above; memqd's --partial-timeout-ms / --silent-timeout-ms (tests)
  // shorten them.
  Session(Server& server, asio::local::stream_protocol::socket socket, size_t maxMessageBytes, uint64_t number,
          std::chrono::milliseconds partialTimeout = kPartialMessageTimeout,
          std::chrono::milliseconds silentTimeout = kSilentConnectionTimeout);

  void start();
  void close(const std::string& why);
  // Queues a notification if this connection subscribed to the scope.
  void notify(const std::string& scope, const std::string& text);
  // Stop after what is queued has been written.
  void closeWhenFlushed();
  // Reads nothing more from the client, as if it had half-closed: the messages already buffered are answered, then
  // the connection closes once its replies are written (memqd drains).
  void endInput();
  // The worker finished the current message (I/O thread): send its reply, then take the next message.
  void finished(std::optional<std::string> reply);
  enum class DirectWrite {
    kNotWritten,  // nothing done: the reply must go through finished() (output ahead of it, or the session closed)
    kPartly,      // what the socket did not take at once is queued for the I/O thread's next write
    kWhole,       // the client has all of it
  };
  // Worker thread, before it ends the message: when nothing is queued or being written ahead of the reply, writes it
  // straight to the socket without blocking, so the client has it without waiting for the I/O thread to wake.
  DirectWrite writeReplyNow(const std::string& reply);
  // Worker thread, when nothing of the message is left for the I/O thread to write: marks the connection free for
  // its next message without waking the I/O thread, and returns true. Returns false, having changed nothing, when
  // the I/O thread asked to hear of the end (input waiting behind the message, end of input, a close after flush,
  // read back-pressure): the caller then posts finished() as for any other message.
  bool endMessageHere();

  bool busy() const { return (handling_.load() & kHandling) != 0; }
  bool closed() const { return closed_; }
  // Any thread: whether the connection is closed. A worker then runs none of its queued requests: no one would read
  // their replies.
  bool closedNow() {
    MutexLock lock(writeMutex_);
    return closed_;
  }
  // The replies queued and not yet written (any thread): how many bytes, and since when the client has read none of
  // them (the queue was empty, or a write last completed, then).
  struct UnreadReplies {
    size_t bytes = 0;
    std::chrono::steady_clock::time_point waitingSince;
  };
  UnreadReplies unreadReplies() {
    MutexLock lock(writeMutex_);
    const std::chrono::steady_clock::time_point partly{
        std::chrono::steady_clock::duration(lastPartialWrite_.load(std::memory_order_relaxed))};
    return {queuedBytes_, std::max(writeWaitingSince_, partly)};
  }
  uint64_t number() const { return number_; }
  ClientState& client() { return *client_; }

 private:
  void readMore();
  void pump();
  void enqueue(std::string text);
  void writeMore();
  void armTimer();
  // After end of input: close once the last message is answered and its reply written.
  void finishInputIfDone();
  // At end of input: whether the client closed its whole connection, not only its sending side, so that nothing
  // written to it would be read.
  bool peerHungUp();
  // I/O thread: asks for the end of the message in hand to be reported through finished() (the worker may then no
  // longer end it by itself). Returns whether there is a message in hand, i.e. whether the request was registered.
  bool requestMessageEndNotice();

  Server& server_;
  asio::local::stream_protocol::socket socket_;
  asio::steady_timer timer_;
  FrameDecoder decoder_;
  std::shared_ptr<ClientState> client_;
  uint64_t number_;
  // Left uninitialised: zero-filling it touched all 16 of its pages for every connection, idle ones included (3,000
  // idle connections took memqd from 1.5 MB to 204 MB resident); a read touches only the pages it fills.
  std::array<char, 64 * 1024> readBuffer_;
  Mutex writeMutex_;
  std::deque<std::string> writeQueue_ GUARDED_BY(writeMutex_);
  size_t queuedBytes_ GUARDED_BY(writeMutex_) = 0;
  std::chrono::steady_clock::time_point writeWaitingSince_ GUARDED_BY(writeMutex_);  // see unreadReplies()
  // When the write in flight last moved bytes, before it completed (a reply of megabytes is written in many steps
  // while its client reads). Atomic: asio may take the first step inside writeMore, which holds writeMutex_.
  std::atomic<std::chrono::steady_clock::rep> lastPartialWrite_{0};
  bool writing_ GUARDED_BY(writeMutex_) = false;
  bool reading_ = false;
  static constexpr unsigned kHandling = 1;  // a message is with a worker
  static constexpr unsigned kNotifyIo = 2;  // ... and the I/O thread waits to hear when it is done
  std::atomic<unsigned> handling_{0};
  bool closed_ = false;
  bool closeAfterFlush_ = false;
  bool sawBytes_ = false;  // a byte other than whitespace arrived (the silent-connection timeout no longer applies)
  bool inputEnded_ = false;
  std::chrono::steady_clock::time_point partialSince_{};
  std::chrono::milliseconds partialTimeout_;
  std::chrono::milliseconds silentTimeout_;
};

}  // namespace memq
