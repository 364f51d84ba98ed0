-- memq.rpc: the JSON-RPC 2.0 client of memqd for Neovim. Owns the socket path rule, the one Unix-socket connection,
-- newline-delimited JSON framing, request ids and their callbacks, per-request timeouts, the `initialize` handshake
-- and reconnecting after the daemon restarts. It knows nothing about buffers or windows (that is memq/init.lua).
--
-- Everything here runs on Neovim's main loop through vim.loop (libuv); callbacks are always invoked through
-- vim.schedule, so callers may use any Neovim API in them. JSON goes through vim.json (Neovim ≥ 0.6), the one codec
-- that may be used inside libuv callbacks (vim.fn may not).

local uv = vim.loop

local M = {}

-- This client's own error codes, for failures that never got an answer from the daemon. Negative like JSON-RPC's but
-- outside the range of the daemon's (docs/protocol.md "Errors"), so callers can tell the two apart.
M.errors = {
  unreachable = -1, -- no daemon listens on the socket
  timeout = -2, -- the daemon did not answer in time
  disconnected = -3, -- the connection closed (the daemon stopped or restarted) before the answer came
  unencodable = -4, -- the params cannot be written as JSON (a function, a cyclic table...)
}

-- True for an error reply of memqd itself (JSON-RPC codes are -32768..-32000), false for this client's own.
function M.is_daemon_error(err)
  return type(err) == 'table' and type(err.code) == 'number' and err.code <= -32000
end

local json_encode, json_decode = vim.json.encode, vim.json.decode

-- The rule of protocol/socket_path.cc: $MEMQ_SOCKET, else $XDG_RUNTIME_DIR/memq/memqd.sock, else
-- /tmp/memq-<uid>/memqd.sock. An empty variable counts as unset.
function M.default_socket_path(env)
  env = env or vim.env
  local explicit = env.MEMQ_SOCKET
  if explicit and explicit ~= '' then
    return explicit
  end
  local runtime = env.XDG_RUNTIME_DIR
  if runtime and runtime ~= '' then
    runtime = runtime:gsub('(.)/+$', '%1')
    return runtime .. '/memq/memqd.sock'
  end
  return '/tmp/memq-' .. tostring(uv.getuid()) .. '/memqd.sock'
end

local Client = {}
Client.__index = Client

-- opts: socket (path; default_socket_path() when nil), timeout_ms (per request), initialize_params (a function
-- returning the params of `initialize`, called at each (re)connection), on_ready(client) (called after each successful
-- `initialize`, before queued requests are sent: the place to re-`subscribe`), on_notification(method, params).
function M.new(opts)
  opts = opts or {}
  local self = setmetatable({}, Client)
  self.socket_path = opts.socket or M.default_socket_path()
  self.timeout_ms = opts.timeout_ms or 2000
  self.initialize_params = opts.initialize_params or function()
    return { client_name = 'nvim' }
  end
  self.on_ready = opts.on_ready
  self.on_notification = opts.on_notification
  self.state = 'closed' -- closed → connecting → initializing → ready → closed
  self.pipe = nil
  self.next_id = 1
  self.pending = {} -- id → { callback, timer }
  self.queued = {} -- requests waiting for the connection to be ready, in order
  self.read_buffer = ''
  self.session = nil -- the token `initialize` returned
  self.server = nil -- the `initialize` result
  return self
end

local function finish(entry, err, result)
  if entry.timer then
    entry.timer:stop()
    entry.timer:close()
    entry.timer = nil
  end
  if entry.callback then
    local callback = entry.callback
    entry.callback = nil
    vim.schedule(function()
      callback(err, result)
    end)
  end
end

-- Fails every request in flight or waiting, and forgets the connection: the next request connects again, which is
-- how a restarted daemon is picked up.
function Client:_drop(err)
  local pipe = self.pipe
  self.pipe = nil
  self.state = 'closed'
  self.read_buffer = ''
  if pipe and not pipe:is_closing() then
    pipe:close()
  end
  local pending, queued = self.pending, self.queued
  self.pending, self.queued = {}, {}
  for _, entry in pairs(pending) do
    finish(entry, err)
  end
  for _, entry in ipairs(queued) do
    finish(entry, err)
  end
end

-- The id of the oldest request still waiting for its reply, or nil. Ids are handed out in send order, so it is the
-- lowest one pending.
function Client:_oldest_pending_id()
  local oldest = nil
  for id in pairs(self.pending) do
    if oldest == nil or id < oldest then
      oldest = id
    end
  end
  return oldest
end

function Client:_handle_message(message)
  if type(message) ~= 'table' then
    return
  end
  local id = message.id
  if message.method ~= nil then
    if (id == nil or id == vim.NIL) and self.on_notification then
      local method, params = message.method, message.params
      vim.schedule(function()
        self.on_notification(method, params)
      end)
    end
    return
  end
  if id == vim.NIL and type(message.error) == 'table' then
    -- An error whose request memqd could not identify (a ParseError, e.g. invalid UTF-8, or a message over the size
    -- limit) carries "id": null (docs/protocol.md). Replies on one connection come back in order, so it answers the
    -- oldest request still waiting: report it now rather than let that request time out.
    id = self:_oldest_pending_id()
  end
  if id == nil or id == vim.NIL then
    return
  end
  local entry = self.pending[id]
  if not entry then
    return -- answered after its timeout: nobody waits for it any more
  end
  self.pending[id] = nil
  if message.error ~= nil and message.error ~= vim.NIL then
    local e = message.error
    finish(entry, { code = e.code, message = e.message, data = e.data ~= vim.NIL and e.data or nil })
  else
    finish(entry, nil, message.result)
  end
end

function Client:_on_read(err, chunk)
  if err or not chunk then
    self:_drop({ code = M.errors.disconnected, message = 'the connection to memqd closed before it answered' })
    return
  end
  self.read_buffer = self.read_buffer .. chunk
  while true do
    local newline = self.read_buffer:find('\n', 1, true)
    if not newline then
      break
    end
    local line = self.read_buffer:sub(1, newline - 1)
    self.read_buffer = self.read_buffer:sub(newline + 1)
    if line:match('%S') then
      local ok, message = pcall(json_decode, line)
      if ok then
        self:_handle_message(message)
      end
    end
  end
end

-- Writes one request and registers its callback and timeout. The connection must be open.
function Client:_send(entry)
  local id = self.next_id
  self.next_id = id + 1
  local message = { jsonrpc = '2.0', id = id, method = entry.method }
  if entry.params ~= nil then
    message.params = entry.params
  end
  local ok, line = pcall(json_encode, message)
  if not ok then
    finish(entry, { code = M.errors.unencodable, message = 'cannot encode the request: ' .. tostring(line) })
    return
  end
  self.pending[id] = entry
  entry.timer = uv.new_timer()
  entry.timer:start(entry.timeout_ms or self.timeout_ms, 0, function()
    if self.pending[id] == entry then
      self.pending[id] = nil
      finish(entry, {
        code = M.errors.timeout,
        message = ('memqd did not answer %s within %d ms'):format(entry.method, entry.timeout_ms or self.timeout_ms),
      })
    end
  end)
  self.pipe:write(line .. '\n', function(write_err)
    if write_err then
      self:_drop({ code = M.errors.disconnected, message = 'cannot write to memqd: ' .. write_err })
    end
  end)
end

function Client:_flush_queue()
  local queued = self.queued
  self.queued = {}
  for _, entry in ipairs(queued) do
    self:_send(entry)
  end
end

-- The handshake: `initialize` first, and only then what was queued, so every request runs as an identified client.
-- A project root the daemon cannot open must not make the whole plugin unusable, so a refused `initialize` is retried
-- once without it (every request names its own project_root anyway).
function Client:_initialize()
  self.state = 'initializing'
  local params = self.initialize_params()
  local function on_result(err, result)
    if self.state ~= 'initializing' then
      return
    end
    if err and params.project_root and M.is_daemon_error(err) then
      params.project_root = nil
      self:_send({ method = 'initialize', params = params, callback = on_result })
      return
    end
    if err then
      self:_drop(err)
      return
    end
    self.session = result.session
    self.server = result
    self.state = 'ready'
    if self.on_ready then
      self.on_ready(self)
    end
    self:_flush_queue()
  end
  self:_send({ method = 'initialize', params = params, callback = on_result })
end

function Client:_connect()
  self.state = 'connecting'
  local pipe = uv.new_pipe(false)
  self.pipe = pipe
  pipe:connect(self.socket_path, function(err)
    if self.pipe ~= pipe then
      return -- dropped (closed) while connecting
    end
    if err then
      self:_drop({
        code = M.errors.unreachable,
        message = ('memqd is not running (nothing answers on %s): start it with `memq daemon start`'):format(
          self.socket_path
        ),
      })
      return
    end
    pipe:read_start(function(read_err, chunk)
      self:_on_read(read_err, chunk)
    end)
    self:_initialize()
  end)
end

-- Calls `method` with `params` (a table, or nil for none) and calls callback(err, result) on the main loop:
-- err is nil or { code, message, data }. Connects (and initializes) first when needed.
-- opts.timeout_ms overrides the client's timeout for this request.
function Client:request(method, params, callback, opts)
  local entry = {
    method = method,
    params = params,
    callback = callback or function() end,
    timeout_ms = opts and opts.timeout_ms or nil,
  }
  if self.state == 'ready' then
    self:_send(entry)
    return
  end
  table.insert(self.queued, entry)
  if self.state == 'closed' then
    self:_connect()
  end
end

-- Calls `method` and waits for its reply (bounded by the request timeout), for scripts and tests.
-- Returns err, result like the callback of request().
function Client:request_sync(method, params, opts)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end, opts)
  local limit = (opts and opts.timeout_ms or self.timeout_ms) + 500
  vim.wait(limit, function()
    return done
  end, 10)
  if not done then
    return { code = M.errors.timeout, message = 'memqd did not answer ' .. method }
  end
  return err, result
end

function Client:is_connected()
  return self.state == 'ready'
end

function Client:close()
  self:_drop({ code = M.errors.unreachable, message = 'the memq client was closed' })
end

return M
