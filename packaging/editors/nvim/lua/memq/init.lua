-- memq: the Neovim face of memq. Owns what the editor shows: which project and file a buffer belongs to, the recall
-- window (:MemqRecall), saving a note on the current file (:MemqSave), the hints of a file shown when its buffer is
-- entered (virtual text on line 1 and statusline()), acting on the memory under the cursor (:MemqHide, :MemqReject,
-- :MemqPin, :MemqUnpin, :MemqRestore, and keys in the recall window), the search picker (:MemqSearch), and the
-- user's configuration (setup()). :checkhealth memq is lua/memq/health.lua. Talking to memqd is
-- memq/rpc.lua's job; the commands and autocommands are declared in plugin/memq.lua.

local rpc = require('memq.rpc')
local uv = vim.loop

local M = {}

M.version = '0.1.0'

local defaults = {
  socket = nil, -- nil: $MEMQ_SOCKET, else $XDG_RUNTIME_DIR/memq/memqd.sock, else /tmp/memq-<uid>/memqd.sock
  timeout_ms = 2000, -- per request; BufEnter never waits on it (requests are asynchronous)
  hints = true, -- ask memqd for the file's hints when a buffer is entered
  virtual_text = true, -- show them at the end of line 1 (statusline() works either way)
  hint_highlight = 'MemqHint', -- linked to Comment unless the colour scheme defines it
  recall_limit = 10, -- how many memories :MemqRecall asks for
  float_border = 'rounded', -- border of the recall window (any nvim_open_win border)
}

M.config = vim.deepcopy(defaults)

local hint_namespace = vim.api.nvim_create_namespace('memq_hints')

-- bufnr → { hints = { {id, label, summary, text}... }, lines = {...}, more = N }: what the buffer shows. Kept, rather
-- than re-asked at each visit, because memqd does not repeat a hint during its cooldown: a second visit would
-- otherwise wipe what the first one showed.
local buffer_hints = {}

local client = nil

local function notify(message, level)
  vim.notify('memq: ' .. message, level or vim.log.levels.INFO)
end

-- One sentence for an error, naming the offending field when the daemon gave one.
local function describe_error(err)
  local message = err.message or 'unknown error'
  if type(err.data) == 'table' and type(err.data.field) == 'string' then
    message = message .. ' (field ' .. err.data.field .. ')'
  end
  return message
end

local function notify_error(err)
  local level = rpc.is_daemon_error(err) and vim.log.levels.ERROR or vim.log.levels.WARN
  notify(describe_error(err), level)
end

local function realpath(path)
  return uv.fs_realpath(path) or path
end

local function parent_of(dir)
  local parent = dir:match('^(.*)/[^/]*$')
  if parent == nil or parent == '' then
    return '/'
  end
  return parent
end

-- The top of the git work tree holding `dir` (a `.git` directory, or a `.git` file in linked worktrees and
-- submodules), or nil.
local function git_root_of(dir)
  while true do
    if uv.fs_stat(dir .. '/.git') then
      return dir
    end
    if dir == '/' then
      return nil
    end
    dir = parent_of(dir)
  end
end

local function is_inside(path, dir)
  if dir == '/' then
    return path:sub(1, 1) == '/'
  end
  return path:sub(1, #dir + 1) == dir .. '/'
end

local function relative_to(path, dir)
  if dir == '/' then
    return path:sub(2)
  end
  return path:sub(#dir + 2)
end

-- The project of the editor itself: the git root of the working directory, or the directory.
local function cwd_project_root()
  local cwd = realpath(uv.cwd())
  return git_root_of(cwd) or cwd
end

-- Where a buffer's file lives for memq: { root = project root, file = path relative to it }, or nil and why not.
-- The root is the git work tree of the file, else the working directory when the file is inside it, else the file's
-- own directory (memqd keeps such a project's memories in <root>/.memq/). Symlinks are resolved as memqd resolves
-- them, so the relative path matches the one memqd stores.
function M.locate(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_option(bufnr, 'buftype') ~= '' then
    return nil, 'this buffer is not a file'
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return nil, 'this buffer has no file name'
  end
  local absolute = vim.fn.fnamemodify(name, ':p')
  local dir = realpath(vim.fn.fnamemodify(absolute, ':h'))
  local file = (dir == '/' and '' or dir) .. '/' .. vim.fn.fnamemodify(absolute, ':t')
  local root = git_root_of(dir)
  if not root then
    local cwd = realpath(uv.cwd())
    root = is_inside(file, cwd) and cwd or dir
  end
  return { root = root, file = relative_to(file, root) }
end

-- ---------------------------------------------------------------------------------------------------------------
-- hints

local function short(text, max)
  if vim.fn.strchars(text) <= max then
    return text
  end
  return vim.fn.strcharpart(text, 0, max - 1) .. '…'
end

-- What a buffer shows, as display lines: each hint's line, then "+N more" (or the daemon's own lines, such as its
-- volume line, when it named no memory).
local function hint_display_lines(entry)
  if #entry.hints == 0 then
    return entry.lines
  end
  local lines = {}
  for _, hint in ipairs(entry.hints) do
    table.insert(lines, hint.text or hint.summary)
  end
  if entry.more > 0 then
    table.insert(lines, '+' .. entry.more .. ' more')
  end
  return lines
end

local function render_hints(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    buffer_hints[bufnr] = nil
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, hint_namespace, 0, -1)
  local entry = buffer_hints[bufnr]
  if not entry or not M.config.virtual_text then
    return
  end
  local lines = hint_display_lines(entry)
  if #lines == 0 then
    return
  end
  vim.api.nvim_buf_set_extmark(bufnr, hint_namespace, 0, 0, {
    virt_text = { { table.concat(lines, '  '), M.config.hint_highlight } },
    virt_text_pos = 'eol',
  })
end

-- New hints go first; hints the buffer already showed stay after them, once each.
local function merge_hints(old, new)
  local merged, seen = {}, {}
  for _, list in ipairs({ new, old }) do
    for _, hint in ipairs(list) do
      if not seen[hint.id] then
        seen[hint.id] = true
        table.insert(merged, hint)
      end
    end
  end
  return merged
end

local function store_hints(bufnr, result)
  local hints = {}
  for _, hint in ipairs(type(result.hints) == 'table' and result.hints or {}) do
    if type(hint) == 'table' and type(hint.id) == 'string' then
      table.insert(hints, {
        id = hint.id,
        label = type(hint.label) == 'string' and hint.label or '',
        summary = type(hint.summary) == 'string' and hint.summary or '',
        text = type(hint.text) == 'string' and hint.text or nil,
      })
    end
  end
  local lines = type(result.lines) == 'table' and result.lines or {}
  local more = type(result.more) == 'number' and result.more or 0
  local previous = buffer_hints[bufnr]
  if previous then
    if #hints == 0 then
      return -- nothing new: keep what the buffer shows
    end
    hints = merge_hints(previous.hints, hints)
  elseif #hints == 0 and #lines == 0 then
    return
  end
  buffer_hints[bufnr] = { hints = hints, lines = lines, more = more }
  render_hints(bufnr)
  vim.cmd('redrawstatus')
end

-- Asks memqd for the hints of a buffer's file, as for a file being opened (`hints/for_tool` with tool `open`).
-- Silent on every failure: hints are a courtesy, and no daemon running is a normal state.
-- opts.new_turn: count this as a new user turn first (`hints/turn`), which is what entering a buffer is; the daemon's
-- per-turn dedup and cooldown then count file visits.
function M.refresh_hints(bufnr, opts)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not M.config.hints then
    return
  end
  local target = M.locate(bufnr)
  if not target then
    return
  end
  local c = M.client()
  if opts and opts.new_turn then
    c:request('hints/turn', nil, function() end)
  end
  c:request('hints/for_tool', { tool = 'open', files = { target.file }, project_root = target.root }, function(err, result)
    if err or type(result) ~= 'table' or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    store_hints(bufnr, result)
  end)
end

-- The buffer's hints for a statusline: `memq: gotcha "summary…" +2`, or "" when it has none.
-- Usage: vim.o.statusline = "%f %{%v:lua.require'memq'.statusline()%}" (or call it from a statusline plugin).
function M.statusline(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local entry = buffer_hints[bufnr]
  if not entry then
    return ''
  end
  local text
  local first = entry.hints[1]
  if first then
    text = (first.label ~= '' and first.label .. ' ' or '') .. '"' .. short(first.summary, 40) .. '"'
    local others = #entry.hints - 1 + entry.more
    if others > 0 then
      text = text .. ' +' .. others
    end
  elseif entry.lines[1] then
    text = (entry.lines[1]:gsub('^· ', ''))
  else
    return ''
  end
  local escaped = ('memq: ' .. text):gsub('%%', '%%%%') -- a statusline reads % as an item
  return escaped
end

-- A buffer went away: forget what it showed.
function M.forget_buffer(bufnr)
  buffer_hints[bufnr] = nil
end

-- The buffer's hints as lines (what :MemqHints prints).
function M.hint_lines(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local entry = buffer_hints[bufnr]
  return entry and hint_display_lines(entry) or {}
end

function M.show_hints()
  local lines = M.hint_lines(0)
  if #lines == 0 then
    notify('no hints for this buffer')
  else
    notify(table.concat(lines, '\n'))
  end
end

-- A memory stopped being active (or changed): drop it from what buffers show, so no buffer keeps advertising it.
local gone_actions = { hide = true, reject = true, supersede = true, purge = true, detach = true, update = true }

local function on_notification(method, params)
  if method ~= 'memory/changed' or type(params) ~= 'table' then
    return
  end
  if gone_actions[params.action] then
    for bufnr, entry in pairs(buffer_hints) do
      local kept = vim.tbl_filter(function(hint)
        return hint.id ~= params.id
      end, entry.hints)
      if #kept ~= #entry.hints then
        entry.hints = kept
        if #kept == 0 then
          buffer_hints[bufnr] = nil
        end
        render_hints(bufnr)
      end
    end
  end
  if params.action == 'create' or params.action == 'attach' or params.action == 'update' then
    -- A memory on the current file may have appeared (saved by an agent, say): ask within the same turn, so what
    -- was already shown is not repeated.
    M.refresh_hints(0)
  end
end

-- ---------------------------------------------------------------------------------------------------------------
-- the client

local function initialize_params()
  return { client_name = 'nvim', client_version = M.version, source = 'user', project_root = cwd_project_root() }
end

-- The shared connection to memqd, created on first use (and again after setup() changes the socket).
function M.client()
  if not client then
    client = rpc.new({
      socket = M.config.socket,
      timeout_ms = M.config.timeout_ms,
      initialize_params = initialize_params,
      on_ready = function(c)
        c:request('subscribe', { scopes = { 'project', 'global' } }, function() end)
      end,
      on_notification = on_notification,
    })
  end
  return client
end

-- ---------------------------------------------------------------------------------------------------------------
-- :MemqRecall

local recall_window = nil

function M.close_recall_window()
  if recall_window and vim.api.nvim_win_is_valid(recall_window) then
    vim.api.nvim_win_close(recall_window, true)
  end
  recall_window = nil
end

local function number_text(value)
  return type(value) == 'number' and ('%.2f'):format(value) or '?'
end

-- The recall window's lines: per memory its summary, then one line of facts (id, score, category, pinned, stale and
-- the files behind it).
-- The second result maps each line number to the id of the memory it shows (both of its lines), for the keys that
-- act on the memory under the cursor.
function M.format_memories(memories, file, query)
  local heading = 'memq: ' .. file .. (query ~= '' and (' · "' .. query .. '"') or '')
  local lines = { heading, '' }
  local line_ids = {}
  if #memories == 0 then
    table.insert(lines, 'no memories for this file')
    return lines, line_ids
  end
  for i, memory in ipairs(memories) do
    local summary = type(memory.summary) == 'string' and memory.summary or ''
    table.insert(lines, ('%d. %s'):format(i, summary:gsub('\n', ' ')))
    line_ids[#lines] = memory.id
    line_ids[#lines + 1] = memory.id
    local facts = { '[' .. tostring(memory.id):sub(1, 8) .. ']', 'score ' .. number_text(memory.score) }
    if type(memory.category) == 'string' then
      table.insert(facts, memory.category)
    end
    if memory.pinned == true then
      table.insert(facts, 'pinned')
    end
    if memory.scope == 'global' then
      table.insert(facts, 'global')
    end
    if memory.stale == true then
      local changed = {}
      for _, key in ipairs({ 'changed_files', 'missing_files' }) do
        if type(memory[key]) == 'table' then
          vim.list_extend(changed, memory[key])
        end
      end
      table.insert(facts, #changed > 0 and ('STALE (' .. table.concat(changed, ', ') .. ' changed)') or 'STALE')
    end
    if type(memory.state) == 'string' and memory.state ~= 'active' then
      table.insert(facts, memory.state)
    end
    table.insert(lines, '   ' .. table.concat(facts, ' · '))
  end
  table.insert(lines, '')
  table.insert(lines, 'H hide · X reject · P pin · U unpin · R restore · q close')
  return lines, line_ids
end

-- recall window buffer → { ids = {line → id}, root = project root }: what the keys in that window act on.
local window_memories = {}

local function open_recall_window(lines, line_ids, root)
  M.close_recall_window()
  local buf = vim.api.nvim_create_buf(false, true)
  window_memories[buf] = { ids = line_ids or {}, root = root }
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      window_memories[buf] = nil
    end,
  })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  vim.api.nvim_buf_set_option(buf, 'bufhidden', 'wipe')
  vim.api.nvim_buf_set_option(buf, 'filetype', 'memq')
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 1, math.max(20, vim.o.columns - 6))
  local height = 0
  for _, line in ipairs(lines) do
    height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
  end
  height = math.min(height, math.max(3, vim.o.lines - 6))
  recall_window = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    style = 'minimal',
    border = M.config.float_border,
  })
  vim.api.nvim_win_set_option(recall_window, 'wrap', true)
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.api.nvim_buf_set_keymap(buf, 'n', key, '<cmd>lua require("memq").close_recall_window()<CR>', {
      noremap = true,
      silent = true,
      nowait = true,
    })
  end
  for key, action in pairs({ H = 'hide', X = 'reject', P = 'pin', U = 'unpin', R = 'restore' }) do
    vim.api.nvim_buf_set_keymap(buf, 'n', key, ('<cmd>lua require("memq").act(%q)<CR>'):format(action), {
      noremap = true,
      silent = true,
      nowait = true,
    })
  end
  return recall_window
end

-- Recalls the memories of the current buffer's file (memory/recall with files = that file) and shows them in a
-- floating window. query: text to rank by; nil means the word under the cursor.
function M.recall(query)
  local target, why = M.locate(0)
  if not target then
    notify(why, vim.log.levels.WARN)
    return
  end
  if query == nil then
    query = vim.fn.expand('<cword>')
  end
  query = vim.trim(query)
  local params = { files = { target.file }, project_root = target.root, limit = M.config.recall_limit }
  if query ~= '' then
    params.query = query
  end
  M.client():request('memory/recall', params, function(err, result)
    if err then
      notify_error(err)
      return
    end
    local memories = type(result) == 'table' and type(result.memories) == 'table' and result.memories or {}
    local lines, line_ids = M.format_memories(memories, target.file, query)
    open_recall_window(lines, line_ids, target.root)
  end)
end

-- ---------------------------------------------------------------------------------------------------------------
-- acting on a memory: :MemqHide, :MemqReject, :MemqPin, :MemqUnpin, :MemqRestore, and the recall window's keys

local actions = {
  hide = { method = 'memory/hide', done = 'hidden' },
  reject = { method = 'memory/reject', done = 'rejected', needs_reason = true },
  pin = { method = 'memory/pin', done = 'pinned' },
  unpin = { method = 'memory/unpin', done = 'unpinned' },
  restore = { method = 'memory/restore', done = 'restored' },
}

-- The layout of a memory id (a UUID v4). memqd takes the full id or a prefix of it of at least 4 characters, matched
-- literally: a prefix has its dashes exactly where the full id has them.
local id_layout = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'

-- True when `word` can be a memory id or an id prefix: hex digits and dashes laid out as a prefix of a memory id,
-- holding at least `min_hex` hex digits (default 4, memqd's minimum). Below 8 hex digits it must also hold a decimal
-- digit, so that words such as "dead" or "facade" are not taken for ids.
function M.looks_like_id(word, min_hex)
  if type(word) ~= 'string' or word == '' or #word > #id_layout then
    return false
  end
  local hex = 0
  for i = 1, #word do
    local char, expected = word:sub(i, i), id_layout:sub(i, i)
    if expected == '-' then
      if char ~= '-' then
        return false
      end
    elseif char:match('^%x$') then
      hex = hex + 1
    else
      return false
    end
  end
  return hex >= (min_hex or 4) and (hex >= 8 or word:match('%d') ~= nil)
end

-- An id (or id prefix) written under the cursor: the run of hex digits and dashes around it, when that run is a whole
-- word (not part of an identifier such as 0x4096abcdef) and holds at least 8 hex digits laid out as in an id (the
-- short ids memq shows are 8). A number in code ("4096") is not an id. nil when there is none.
local function id_under_cursor()
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2] + 1
  local function idchar(at)
    return at >= 1 and at <= #line and line:sub(at, at):match('[%x%-]') ~= nil
  end
  if not idchar(col) then
    return nil
  end
  local first, last = col, col
  while idchar(first - 1) do
    first = first - 1
  end
  while idchar(last + 1) do
    last = last + 1
  end
  if line:sub(first - 1, first - 1):match('[%w_]') or line:sub(last + 1, last + 1):match('[%w_]') then
    return nil
  end
  local word = line:sub(first, last):gsub('^%-+', ''):gsub('%-+$', '')
  if M.looks_like_id(word, 8) then
    return word
  end
  return nil
end

-- The memory under the cursor, and the project it belongs to: in the recall window, the memory of the cursor's line;
-- elsewhere an id under the cursor (at least 8 hex digits, dashes where an id has them), else the buffer's first
-- hint. nil when there is none.
function M.memory_under_cursor()
  local buf = vim.api.nvim_get_current_buf()
  local shown = window_memories[buf]
  if shown then
    return shown.ids[vim.api.nvim_win_get_cursor(0)[1]], shown.root
  end
  local word = id_under_cursor()
  if word then
    return word, cwd_project_root()
  end
  local entry = buffer_hints[buf]
  if entry and entry.hints[1] and entry.hints[1].id then
    local target = M.locate(buf)
    return entry.hints[1].id, target and target.root or cwd_project_root()
  end
  return nil
end

-- Runs `action` (hide, reject, pin, unpin, restore) on `id`, or on the memory under the cursor when id is nil.
-- reject needs a reason: `reason`, else asked for; hide takes one when given.
function M.act(action, id, reason)
  local spec = actions[action]
  if not spec then
    notify('unknown action ' .. tostring(action), vim.log.levels.ERROR)
    return
  end
  local root
  if id == nil or id == '' then
    id, root = M.memory_under_cursor()
  end
  if id == nil then
    notify('no memory under the cursor: put it on a memory of the recall window, or give an id', vim.log.levels.WARN)
    return
  end
  if spec.needs_reason and (reason == nil or vim.trim(reason) == '') then
    reason = vim.fn.input('memq: why is it wrong? ')
    if vim.trim(reason) == '' then
      notify('a reject needs a reason; nothing was changed', vim.log.levels.WARN)
      return
    end
  end
  local params = { id = id, project_root = root or cwd_project_root() }
  if reason ~= nil and vim.trim(reason) ~= '' and (action == 'reject' or action == 'hide') then
    params.reason = vim.trim(reason)
  end
  M.client():request(spec.method, params, function(err, result)
    if err then
      notify_error(err)
      return
    end
    local summary = type(result) == 'table' and type(result.summary) == 'string' and result.summary or ''
    local full = type(result) == 'table' and type(result.id) == 'string' and result.id or id
    notify(('%s [%s] %s'):format(spec.done, full:sub(1, 8), summary))
  end)
end

-- ---------------------------------------------------------------------------------------------------------------
-- :MemqSearch: the search picker

-- Searches the project's memories for `query` (memory/search) and offers them in vim.ui.select (Telescope or any
-- other picker that replaces it); the one picked opens in the recall window, where the keys act on it.
function M.search(query)
  query = vim.trim(query or '')
  if query == '' then
    notify('nothing to search for: give the text, as in :MemqSearch {text}', vim.log.levels.WARN)
    return
  end
  local root = cwd_project_root()
  M.client():request('memory/search', { query = query, project_root = root, limit = M.config.recall_limit },
    function(err, result)
      if err then
        notify_error(err)
        return
      end
      local memories = type(result) == 'table' and type(result.memories) == 'table' and result.memories or {}
      if #memories == 0 then
        notify('no memories match "' .. query .. '"')
        return
      end
      vim.ui.select(memories, {
        prompt = 'memq: ' .. query,
        format_item = function(memory)
          return ('[%s] %s'):format(tostring(memory.id):sub(1, 8), tostring(memory.summary or ''))
        end,
      }, function(choice)
        if choice then
          local lines, line_ids = M.format_memories({ choice }, 'search', query)
          open_recall_window(lines, line_ids, root)
        end
      end)
    end)
end

-- ---------------------------------------------------------------------------------------------------------------
-- :MemqSave

local function warning_text(warning)
  if type(warning) == 'string' then
    return warning
  end
  if type(warning) == 'table' and type(warning.message) == 'string' then
    return warning.message
  end
  return vim.json.encode(warning)
end

-- What :MemqSave echoes for a memory/save result: the outcome with the id, then similar memories and warnings.
function M.describe_save(result)
  local id = type(result.id) == 'string' and result.id:sub(1, 8) or '?'
  local scope = type(result.scope) == 'string' and result.scope or '?'
  local lines
  if result.status == 'created' then
    lines = { ('saved %s (%s)'):format(id, scope) }
  elseif result.status == 'deduped' then
    lines = { ('already saved as %s (%s); attached to this file'):format(id, scope) }
  else
    local hint = type(result.hint) == 'string' and result.hint or tostring(result.status)
    lines = { ('not saved: %s [%s]'):format(hint, id) }
  end
  for _, similar in ipairs(type(result.similar) == 'table' and result.similar or {}) do
    table.insert(
      lines,
      ('  similar: [%s] %s'):format(tostring(similar.id):sub(1, 8), type(similar.summary) == 'string' and similar.summary or '')
    )
  end
  for _, warning in ipairs(type(result.warnings) == 'table' and result.warnings or {}) do
    table.insert(lines, '  warning: ' .. warning_text(warning))
  end
  local redactions = type(result.redactions) == 'table' and #result.redactions or 0
  if redactions > 0 then
    table.insert(lines, ('  %d credential(s) redacted before saving'):format(redactions))
  end
  return lines
end

-- Saves `text` as a note attached to the current buffer's file (memory/save with files = that file).
function M.save(text)
  text = vim.trim(text or '')
  if text == '' then
    notify('nothing to save: give the note\'s text, as in :MemqSave {text}', vim.log.levels.WARN)
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local target, why = M.locate(bufnr)
  if not target then
    notify(why, vim.log.levels.WARN)
    return
  end
  M.client():request('memory/save', { summary = text, files = { target.file }, project_root = target.root }, function(err, result)
    if err then
      notify_error(err)
      return
    end
    local saved = result.status == 'created' or result.status == 'deduped'
    local level = saved and vim.log.levels.INFO or vim.log.levels.WARN
    notify(table.concat(M.describe_save(result), '\n'), level)
  end)
end

-- ---------------------------------------------------------------------------------------------------------------
-- setup

function M.setup(opts)
  local previous_socket, previous_timeout = M.config.socket, M.config.timeout_ms
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if client and (M.config.socket ~= previous_socket or M.config.timeout_ms ~= previous_timeout) then
    client:close()
    client = nil
  end
  for bufnr in pairs(buffer_hints) do
    render_hints(bufnr)
  end
end

vim.cmd('highlight default link MemqHint Comment')

return M
