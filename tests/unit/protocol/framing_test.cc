// FrameDecoder and encodeFrame: both framings, split feeds, size limits, malformed headers.
#include "protocol/framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memq {
namespace {

using Kind = Frame::Kind;

std::vector<Frame> drain(FrameDecoder& decoder) {
  std::vector<Frame> frames;
  while (std::optional<Frame> frame = decoder.next()) frames.push_back(std::move(*frame));
  return frames;
}

std::vector<Frame> feedAll(FrameDecoder& decoder, std::string_view bytes) {
  decoder.feed(bytes);
  return drain(decoder);
}

// Feeds one byte at a time, draining after each, as a slow client would arrive.
std::vector<Frame> feedByteByByte(FrameDecoder& decoder, std::string_view bytes) {
  std::vector<Frame> frames;
  for (char c : bytes) {
    decoder.feed(std::string_view(&c, 1));
    for (Frame& f : drain(decoder)) frames.push_back(std::move(f));
  }
  return frames;
}

TEST(FramingNdjson, SingleMessage) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "{\"jsonrpc\":\"2.0\",\"method\":\"stats\",\"id\":1}\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);
  EXPECT_EQ(frames[0].payload, "{\"jsonrpc\":\"2.0\",\"method\":\"stats\",\"id\":1}");
  EXPECT_EQ(decoder.framing(), Framing::kNdjson);
}

TEST(FramingNdjson, ALargeMessageDoesNotPinItsBufferOnceReturned) {
  // A connection that sent one 1 MiB import part and then idles must not hold a megabyte for the rest of its life.
  FrameDecoder decoder;
  const std::string big = "{\"jsonrpc\":\"2.0\",\"method\":\"import\",\"params\":{\"jsonl\":\"" +
                          std::string(1000 * 1000, 'x') + "\"},\"id\":1}\n";
  // As a socket delivers it: 64 KiB reads.
  std::vector<Frame> frames;
  for (size_t at = 0; at < big.size(); at += 65536) {
    for (Frame& f : feedAll(decoder, std::string_view(big).substr(at, 65536))) frames.push_back(std::move(f));
  }
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);
  EXPECT_LE(decoder.bufferCapacity(), FrameDecoder::kKeptBufferBytes);
  // Small messages after it are framed as before.
  auto small = feedAll(decoder, "{\"jsonrpc\":\"2.0\",\"method\":\"stats\",\"id\":2}\n");
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].kind, Kind::kMessage);
}

TEST(FramingNdjson, WaitsForNewline) {
  FrameDecoder decoder;
  EXPECT_TRUE(feedAll(decoder, "{\"a\":1}").empty());
  auto frames = feedAll(decoder, "\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "{\"a\":1}");
}

TEST(FramingNdjson, SeveralMessagesInOneFeed) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "{\"a\":1}\n{\"b\":2}\n[3]\n{\"partial\"");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].payload, "{\"a\":1}");
  EXPECT_EQ(frames[1].payload, "{\"b\":2}");
  EXPECT_EQ(frames[2].payload, "[3]");
  EXPECT_EQ(decoder.bufferedBytes(), std::string("{\"partial\"").size());
}

TEST(FramingNdjson, ByteByByte) {
  FrameDecoder decoder;
  auto frames = feedByteByByte(decoder, "{\"a\":1}\r\n\n{\"b\":\"x y\"}\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "{\"a\":1}");
  EXPECT_EQ(frames[1].payload, "{\"b\":\"x y\"}");
}

TEST(FramingNdjson, CrlfIsStripped) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "{}\r\n[]\r\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(frames[1].payload, "[]");
}

TEST(FramingNdjson, BlankLinesAreIgnored) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "\n\n   \n\r\n\t\n{}\n \r\n\n[]\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(frames[1].payload, "[]");
}

TEST(FramingNdjson, AnythingThatIsNotAHeaderIsNdjson) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "Cat: not json\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);  // the envelope answers ParseError; framing does not judge JSON
  EXPECT_EQ(frames[0].payload, "Cat: not json");
  EXPECT_EQ(decoder.framing(), Framing::kNdjson);
}

TEST(FramingNdjson, MessageAtTheLimitPassesOneByteOverIsSkipped) {
  FrameDecoder decoder(8);
  auto frames = feedAll(decoder, "12345678\n123456789\n{}\n");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);
  EXPECT_EQ(frames[0].payload, "12345678");
  EXPECT_EQ(frames[1].kind, Kind::kTooLarge);
  EXPECT_EQ(frames[2].kind, Kind::kMessage);
  EXPECT_EQ(frames[2].payload, "{}");
}

TEST(FramingNdjson, LimitDoesNotCountTheCarriageReturn) {
  FrameDecoder decoder(8);
  auto frames = feedByteByByte(decoder, "12345678\r\n{}\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "12345678");
  EXPECT_EQ(frames[1].payload, "{}");
}

TEST(FramingNdjson, OversizeStreamedInChunksIsReportedOnceAndMemoryStaysBounded) {
  const std::size_t limit = 1024;
  FrameDecoder decoder(limit);
  std::string chunk(100, 'x');
  std::vector<Frame> frames;
  std::size_t maxBuffered = 0;
  for (int i = 0; i < 10000; ++i) {  // ~1 MB line against a 1 KiB limit
    decoder.feed(chunk);
    for (Frame& f : drain(decoder)) frames.push_back(std::move(f));
    maxBuffered = std::max(maxBuffered, decoder.bufferedBytes());
  }
  decoder.feed("tail\n{\"ok\":true}\n");
  for (Frame& f : drain(decoder)) frames.push_back(std::move(f));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_NE(frames[0].payload.find("1024"), std::string::npos);
  EXPECT_EQ(frames[1].kind, Kind::kMessage);
  EXPECT_EQ(frames[1].payload, "{\"ok\":true}");
  EXPECT_LE(maxBuffered, limit + chunk.size() + 1);
}

TEST(FramingNdjson, OversizeByteByByteThenGoodMessage) {
  FrameDecoder decoder(16);
  auto frames = feedByteByByte(decoder, std::string(100, 'y') + "\n{\"id\":1}\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_EQ(frames[1].payload, "{\"id\":1}");
  EXPECT_EQ(decoder.bufferedBytes(), 0u);
}

TEST(FramingNdjson, DefaultLimitIsOneMebibyte) {
  FrameDecoder decoder;
  EXPECT_EQ(decoder.maxMessageBytes(), 1024u * 1024u);
  std::string big = "\"" + std::string(1024 * 1024, 'a') + "\"";
  auto frames = feedAll(decoder, big + "\n{}\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_EQ(frames[1].payload, "{}");
}

TEST(FramingLsp, SingleMessage) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "Content-Length: 7\r\n\r\n{\"a\":1}");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);
  EXPECT_EQ(frames[0].payload, "{\"a\":1}");
  EXPECT_EQ(decoder.framing(), Framing::kContentLength);
}

TEST(FramingLsp, HeaderNameIsCaseInsensitiveAndContentTypeIsAccepted) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder,
                        "content-LENGTH:2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
                        "Content-Type: application/vscode-jsonrpc\r\nContent-Length: 2\r\n\r\n[]");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(frames[1].payload, "[]");
}

TEST(FramingLsp, ContentTypeFirstSelectsLspFraming) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(decoder.framing(), Framing::kContentLength);
}

TEST(FramingLsp, ByteByByteWithBodyContainingNewlines) {
  FrameDecoder decoder;
  std::string body = "{\n  \"a\": \"Content-Length: 3\"\n}";
  auto frames = feedByteByByte(decoder, encodeFrame(Framing::kContentLength, body) +
                                            encodeFrame(Framing::kContentLength, "{}"));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, body);
  EXPECT_EQ(frames[1].payload, "{}");
}

TEST(FramingLsp, DetectionWaitsForAnAmbiguousPrefix) {
  FrameDecoder decoder;
  EXPECT_TRUE(feedAll(decoder, "  \r\nConte").empty());
  EXPECT_EQ(decoder.framing(), Framing::kUnknown);
  auto frames = feedAll(decoder, "nt-Length: 2\r\n\r\n{}");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "{}");
}

TEST(FramingLsp, BareLineFeedsAndBlankLinesBetweenMessagesAreTolerated) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "Content-Length: 2\n\n{}\r\n\r\nContent-Length: 2\r\n\r\n[]");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(frames[1].payload, "[]");
}

TEST(FramingLsp, OversizeBodyIsSkippedByLengthThenGoodMessage) {
  FrameDecoder decoder(10);
  std::string big(50, 'z');
  auto frames = feedAll(decoder, "Content-Length: 50\r\n\r\n" + big + "Content-Length: 2\r\n\r\n{}");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_NE(frames[0].payload.find("50 bytes"), std::string::npos);
  EXPECT_EQ(frames[1].kind, Kind::kMessage);
  EXPECT_EQ(frames[1].payload, "{}");
}

TEST(FramingLsp, OversizeBodyStreamedKeepsMemoryBounded) {
  FrameDecoder decoder(1024);
  std::vector<Frame> frames = feedAll(decoder, "Content-Length: 1000000\r\n\r\n");
  std::string chunk(1000, 'q');
  std::size_t maxBuffered = 0;
  for (int i = 0; i < 1000; ++i) {
    decoder.feed(chunk);
    for (Frame& f : drain(decoder)) frames.push_back(std::move(f));
    maxBuffered = std::max(maxBuffered, decoder.bufferedBytes());
  }
  for (Frame& f : feedAll(decoder, "Content-Length: 2\r\n\r\n{}")) frames.push_back(std::move(f));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_EQ(frames[1].payload, "{}");
  EXPECT_EQ(maxBuffered, 0u);
}

TEST(FramingLsp, ZeroLengthBodyIsAnEmptyMessage) {
  FrameDecoder decoder;
  auto frames = feedAll(decoder, "Content-Length: 0\r\n\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kMessage);
  EXPECT_EQ(frames[0].payload, "");
  EXPECT_EQ(frames[1].payload, "{}");
}

void expectFatal(std::string_view bytes) {
  SCOPED_TRACE(std::string(bytes));
  FrameDecoder decoder;
  auto frames = feedAll(decoder, bytes);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().kind, Kind::kFatal);
  EXPECT_FALSE(frames.back().payload.empty());
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) EXPECT_EQ(frames[i].kind, Kind::kMessage);
  EXPECT_TRUE(decoder.failed());
  decoder.feed("Content-Length: 2\r\n\r\n{}");
  EXPECT_FALSE(decoder.next().has_value());
  EXPECT_EQ(decoder.bufferedBytes(), 0u);
}

TEST(FramingLsp, GarbageHeadersAreFatal) {
  expectFatal("Content-Length: abc\r\n\r\n{}");
  expectFatal("Content-Length: -2\r\n\r\n{}");
  expectFatal("Content-Length: 99999999999999999999999\r\n\r\n{}");
  expectFatal("Content-Length: 2\r\nthis is not a header\r\n\r\n{}");
  expectFatal("Content-Length: 2\r\n{\"jsonrpc\":\"2.0\"}\r\n\r\n{}");
  expectFatal("Content-Type: application/json\r\n\r\n{}");  // no length
  expectFatal("Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
  expectFatal("Content-Length: 2\r\n\r\n{}garbage after the body\r\n\r\n");
}

TEST(FramingLsp, EndlessHeaderBlockIsFatalAndBounded) {
  FrameDecoder decoder;
  decoder.feed("Content-Length: 2\r\n");
  std::vector<Frame> frames;
  for (int i = 0; i < 1000 && frames.empty(); ++i) {
    decoder.feed("X-Filler: 0123456789\r\n");
    frames = drain(decoder);
  }
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kFatal);
}

TEST(FramingStall, MidMessageCoversEveryPartialState) {
  FrameDecoder idle;
  EXPECT_FALSE(idle.midMessage());
  // A complete header block with none of its body yet holds no bytes, but is still mid-message.
  FrameDecoder header;
  EXPECT_TRUE(feedAll(header, "Content-Length: 5\r\n\r\n").empty());
  EXPECT_EQ(header.bufferedBytes(), 0u);
  EXPECT_TRUE(header.midMessage());
  ASSERT_EQ(feedAll(header, "12345").size(), 1u);
  EXPECT_FALSE(header.midMessage());
  // Half a header name.
  FrameDecoder half;
  EXPECT_TRUE(feedAll(half, "Content-Len").empty());
  EXPECT_TRUE(half.midMessage());
  // An over-size NDJSON line being skipped.
  FrameDecoder skipping(1024);
  auto frames = feedAll(skipping, std::string(2048, 'x'));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kTooLarge);
  EXPECT_TRUE(skipping.midMessage());
  EXPECT_TRUE(feedAll(skipping, "xx\n").empty());
  EXPECT_FALSE(skipping.midMessage());
  // A partial NDJSON line.
  FrameDecoder line;
  EXPECT_TRUE(feedAll(line, "{\"jsonrpc\"").empty());
  EXPECT_TRUE(line.midMessage());
}

TEST(FramingEncode, Ndjson) {
  EXPECT_EQ(encodeFrame(Framing::kNdjson, "{\"a\":1}"), "{\"a\":1}\n");
  EXPECT_EQ(encodeFrame(Framing::kUnknown, "{}"), "{}\n");
}

TEST(FramingEncode, ContentLengthCountsBytesNotCharacters) {
  std::string body = "{\"s\":\"\xC3\xA9\"}";  // é is two bytes
  EXPECT_EQ(encodeFrame(Framing::kContentLength, body), "Content-Length: 10\r\n\r\n" + body);
}

TEST(FramingEncode, RoundTripsThroughTheDecoder) {
  for (Framing framing : {Framing::kNdjson, Framing::kContentLength}) {
    FrameDecoder decoder;
    std::string stream;
    for (int i = 0; i < 100; ++i) stream += encodeFrame(framing, "{\"id\":" + std::to_string(i) + "}");
    auto frames = feedAll(decoder, stream);
    ASSERT_EQ(frames.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(frames[i].payload, "{\"id\":" + std::to_string(i) + "}");
    EXPECT_EQ(decoder.framing(), framing);
  }
}

}  // namespace
}  // namespace memq
