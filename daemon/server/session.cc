// One connection's I/O; see session.h.
#include "daemon/server/session.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "daemon/server/server.h"
#include "protocol/envelope.h"

static_assert(memq::Dispatcher::kMaxReplyBytes + (64u << 10) <= memq::Session::kMaxQueuedBytes,
              "a reply the dispatcher lets through, framed, must fit what a connection may queue");

namespace memq {
namespace {

// Whether `bytes` hold a byte other than the whitespace framing skips between messages (protocol/framing.cc): only
// such a byte can begin a message, so only it ends a connection's silence.
bool holdsMoreThanWhitespace(std::string_view bytes) {
  return std::any_of(bytes.begin(), bytes.end(),
                     [](char c) { return c != ' ' && c != '\t' && c != '\r' && c != '\n'; });
}

}  // namespace

Session::Session(Server& server, asio::local::stream_protocol::socket socket, size_t maxMessageBytes, uint64_t number,
                 std::chrono::milliseconds partialTimeout, std::chrono::milliseconds silentTimeout)
    : server_(server),
      socket_(std::move(socket)),
      timer_(server.io()),
      decoder_(maxMessageBytes),
      client_(std::make_shared<ClientState>()),
      number_(number),
      partialTimeout_(partialTimeout),
      silentTimeout_(silentTimeout) {}

void Session::start() {
  partialSince_ = std::chrono::steady_clock::now();  // the silent-connection clock starts at accept
  armTimer();
  readMore();
}

void Session::armTimer() {
  // Check a few times per timeout, at most once a second.
  auto tick = std::min<std::chrono::milliseconds>({std::chrono::milliseconds(1000), partialTimeout_ / 4, silentTimeout_ / 4});
  timer_.expires_after(std::max(tick, std::chrono::milliseconds(10)));
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec || self->closed_) return;
    auto now = std::chrono::steady_clock::now();
    if (!self->sawBytes_ && now - self->partialSince_ > self->silentTimeout_) {
      self->close("sent nothing for " + std::to_string(self->silentTimeout_.count()) + " ms");
      return;
    }
    if (self->decoder_.midMessage() && !self->busy() && now - self->partialSince_ > self->partialTimeout_) {
      self->close("a partial message stalled for " + std::to_string(self->partialTimeout_.count()) + " ms");
      return;
    }
    self->armTimer();
  });
}

void Session::endInput() {
  if (closed_ || inputEnded_) return;
  inputEnded_ = true;
  if (busy()) return;  // finished() answers the rest of the buffered input, then closes
  pump();
  finishInputIfDone();
}

void Session::finishInputIfDone() {
  if (inputEnded_ && !requestMessageEndNotice()) closeWhenFlushed();
}

bool Session::requestMessageEndNotice() {
  unsigned state = handling_.load();
  while (state & kHandling) {
    if (state & kNotifyIo) return true;
    // Fails when the worker ended the message meanwhile (state 0: the loop ends) or a racing update happened.
    if (handling_.compare_exchange_weak(state, state | kNotifyIo)) return true;
  }
  return false;
}

bool Session::endMessageHere() {
  unsigned expected = kHandling;
  return handling_.compare_exchange_strong(expected, 0);
}

void Session::readMore() {
  if (closed_ || reading_ || inputEnded_) return;
  // Back-pressure: while a message is being handled, hold at most a few messages' worth of unread input.
  if (decoder_.bufferedBytes() > 2 * decoder_.maxMessageBytes() && requestMessageEndNotice()) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(readBuffer_), [self = shared_from_this()](const asio::error_code& ec, size_t n) {
    self->reading_ = false;
    if (ec == asio::error::eof) {
      if (self->peerHungUp()) {
        // Nobody will read a reply: what the client sent and memqd has not begun is dropped, not run. A client that
        // connects, sends and closes in a loop would otherwise fill the workers' queue with work for no one.
        self->close("the client closed the connection");
        return;
      }
      // The client half-closed (`printf ... | socat`): answer what it sent, then close.
      self->inputEnded_ = true;
      self->pump();
      self->finishInputIfDone();
      return;
    }
    if (ec) {
      self->close(ec.message());
      return;
    }
    const std::string_view bytes(self->readBuffer_.data(), n);
    // A message begins: the partial-message clock starts. Before the first byte that is not whitespace, the clock
    // is the silent connection's, counting from accept: whitespace alone (a single space) does not restart it, or a
    // connection sending nothing else would never be closed as silent.
    if (self->sawBytes_ ? !self->decoder_.midMessage() : holdsMoreThanWhitespace(bytes)) {
      self->partialSince_ = std::chrono::steady_clock::now();
      self->sawBytes_ = true;
    }
    self->decoder_.feed(bytes);
    self->pump();
    self->readMore();
  });
}

bool Session::peerHungUp() {
  // End of input alone cannot tell: a client that shut down only its sending side (shutdown(SHUT_WR), as socat and
  // nc do) still reads the replies. On a Unix socket the kernel reports POLLHUP only once the peer has shut down both
  // directions or closed the socket.
  pollfd hangUp{socket_.native_handle(), 0, 0};
  int ready = 0;
  do {
    ready = ::poll(&hangUp, 1, 0);
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && (hangUp.revents & POLLHUP) != 0;
}

void Session::pump() {
  if (closed_ || requestMessageEndNotice()) return;
  auto frame = decoder_.next();
  if (!frame) return;
  partialSince_ = std::chrono::steady_clock::now();
  switch (frame->kind) {
    case Frame::Kind::kFatal:
      spdlog::warn("connection {}: cannot frame input ({}); closing", number_, frame->payload);
      close("unframeable input");
      return;
    case Frame::Kind::kTooLarge:
      enqueue(serializeMessage(makeErrorReply(nullptr, Status(ErrorCode::kInvalidRequest, frame->payload))));
      pump();
      return;
    case Frame::Kind::kMessage:
      // Input held behind this message (a client that pipelines) is taken when it ends, so that end must reach the
      // I/O thread: nothing else would wake it for bytes it already has.
      handling_.store(decoder_.midMessage() ? kHandling | kNotifyIo : kHandling);
      server_.submit(shared_from_this(), std::move(frame->payload));
      return;
  }
}

void Session::finished(std::optional<std::string> reply) {
  handling_.store(0);
  if (closed_) return;
  if (reply) enqueue(std::move(*reply));
  writeMore();  // whatever writeReplyNow left queued
  if (closeAfterFlush_) {
    writeMore();
    return;
  }
  pump();
  readMore();
  finishInputIfDone();
}

void Session::enqueue(std::string text) {
  if (closed_) return;
  std::string framed = encodeFrame(decoder_.framing(), text);
  size_t queued = 0;
  {
    MutexLock lock(writeMutex_);
    queued = queuedBytes_ + framed.size();
    if (queued <= kMaxQueuedBytes) {
      if (writeQueue_.empty()) writeWaitingSince_ = std::chrono::steady_clock::now();
      queuedBytes_ = queued;
      server_.replyBytesQueued(framed.size());
      writeQueue_.push_back(std::move(framed));
    }
  }
  if (queued > kMaxQueuedBytes) {
    spdlog::warn("connection {}: {} bytes of replies unread; disconnecting the slow client", number_, queued);
    close("write queue over its bound");
    return;
  }
  writeMore();
  server_.enforceReplyBudget();
}

Session::DirectWrite Session::writeReplyNow(const std::string& reply) {
  // The framing was decided before the message being answered was framed, and the I/O thread does not change it
  // afterwards; the post to the worker pool orders that decision before this read.
  std::string framed = encodeFrame(decoder_.framing(), reply);
  // enqueue's bound check disconnects, as for any reply.
  if (framed.size() > kMaxQueuedBytes) return DirectWrite::kNotWritten;
  MutexLock lock(writeMutex_);
  if (closed_ || writing_ || !writeQueue_.empty()) return DirectWrite::kNotWritten;
  size_t sent = 0;
  while (sent < framed.size()) {
    // MSG_DONTWAIT: a client that is not reading must never hold a worker. MSG_NOSIGNAL: a peer that went away is an
    // EPIPE here, not a SIGPIPE for the whole daemon.
    ssize_t n = ::send(socket_.native_handle(), framed.data() + sent, framed.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      // EAGAIN (socket buffer full): the rest waits for the I/O thread's async write. Any other error: that write
      // meets the same error and closes the session on the I/O thread, as it did before.
      break;
    }
  }
  if (sent == framed.size()) return DirectWrite::kWhole;
  writeWaitingSince_ = std::chrono::steady_clock::now();  // the queue was empty
  queuedBytes_ += framed.size() - sent;
  server_.replyBytesQueued(framed.size() - sent);
  writeQueue_.push_back(framed.substr(sent));
  server_.enforceReplyBudgetSoon();
  return DirectWrite::kPartly;
}

void Session::writeMore() {
  bool flushedForClose = false;
  {
    MutexLock lock(writeMutex_);
    if (writing_ || writeQueue_.empty() || closed_) {
      flushedForClose = !writing_ && writeQueue_.empty() && closeAfterFlush_;
    } else {
      writing_ = true;
      // Everything queued goes out in one gathered write: a reply and the notifications queued beside it cost one
      // sendmsg, not one each. The deque keeps its elements in place while more are pushed behind them, so the
      // buffers stay valid until the write completes. Started under the lock because asio may write part of it at
      // once, and a worker's writeReplyNow must not slip bytes in between; the completion handler never runs inline.
      const size_t count = std::min(writeQueue_.size(), kMaxBuffersPerWrite);
      std::vector<asio::const_buffer> buffers;
      buffers.reserve(count);
      for (size_t i = 0; i < count; ++i) buffers.push_back(asio::buffer(writeQueue_[i]));
      // Each step that moves bytes counts as the client reading (unreadReplies): the reply budget cuts the client
      // that reads nothing, not one in the middle of a large reply.
      // The completion handler below holds the session, and with it this condition's operation.
      auto noteProgress = [session = this, moved = size_t{0}](const asio::error_code& ec,
                                                              size_t transferred) mutable -> size_t {
        if (transferred > moved) {
          moved = transferred;
          session->lastPartialWrite_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                                        std::memory_order_relaxed);
        }
        return asio::transfer_all()(ec, transferred);
      };
      asio::async_write(socket_, buffers, std::move(noteProgress),
                        [self = shared_from_this(), count](const asio::error_code& ec, size_t) {
        {
          MutexLock lock(self->writeMutex_);
          self->writing_ = false;
          if (self->closed_) return;  // the queue may no longer hold what was written
          if (!ec) {
            size_t written = 0;
            for (size_t i = 0; i < count; ++i) {
              written += self->writeQueue_.front().size();
              self->writeQueue_.pop_front();
            }
            self->queuedBytes_ -= written;
            self->server_.replyBytesGone(written);
            self->writeWaitingSince_ = std::chrono::steady_clock::now();  // the client read: what is left waits anew
          }
        }
        if (ec) {
          self->close("write failed: " + ec.message());
          return;
        }
        self->writeMore();
      });
    }
  }
  if (flushedForClose) close("shutdown");
}

void Session::notify(const std::string& scope, const std::string& text) {
  {
    MutexLock lock(client_->mutex);
    if (!client_->subscribed) return;
    if (!client_->subscribedScopes.empty() && !client_->subscribedScopes.count(scope)) return;
  }
  enqueue(text);
}

void Session::closeWhenFlushed() {
  closeAfterFlush_ = true;
  if (!requestMessageEndNotice()) writeMore();
}

void Session::close(const std::string& why) {
  if (closed_) return;
  spdlog::debug("connection {} closed: {}", number_, why);
  asio::error_code ignored;
  timer_.cancel();
  {
    // Under the lock: a worker in writeReplyNow either finishes its send before the descriptor closes or sees
    // closed_ and writes nothing.
    MutexLock lock(writeMutex_);
    closed_ = true;
    // What was queued will never be written: it no longer counts towards the total over all sessions.
    server_.replyBytesGone(queuedBytes_);
    queuedBytes_ = 0;
    socket_.shutdown(asio::socket_base::shutdown_both, ignored);
    socket_.close(ignored);
  }
  // The queue is not cleared here: an async_write in flight still reads its front buffer. It goes with the session.
  server_.sessionClosed(this);
}

}  // namespace memq
