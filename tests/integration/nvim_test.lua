-- Drives the memq Neovim plugin inside headless nvim for nvim_test.sh: loads plugin/memq.lua, edits files of the
-- test repository, runs the commands, and checks what the user would see (messages, the recall window's lines, the
-- hint extmark, statusline()). Writes one "ok"/"FAIL" line per check and a final PASS to $MEMQ_TEST_RESULTS, then
-- quits with :cquit on any failure. Every wait is bounded with vim.wait.
--
-- $MEMQ_TEST_PHASE: "nodaemon" (nothing listens on $MEMQ_SOCKET) or "daemon" (memqd serves it; the script restarts
-- it once, through $MEMQ_TEST_MEMQD, to check that the plugin reconnects).

local phase = vim.env.MEMQ_TEST_PHASE
local results_path = vim.env.MEMQ_TEST_RESULTS
local results = {}
local failed = false

local function record(ok, name, detail)
  local line = ok and ('ok ' .. name) or ('FAIL ' .. name .. (detail and (': ' .. tostring(detail)) or ''))
  table.insert(results, line)
  if not ok then
    failed = true
  end
end

local function finish()
  table.insert(results, failed and 'FAIL' or 'PASS')
  local file = io.open(results_path, 'w')
  file:write(table.concat(results, '\n') .. '\n')
  file:close()
  vim.cmd(failed and 'cquit 1' or 'qall!')
end

-- Every message the plugin shows goes through vim.notify; keep them to assert on.
local messages = {}
vim.notify = function(message, level)
  table.insert(messages, { text = message, level = level })
end

local function wait_for(condition, timeout_ms)
  return vim.wait(timeout_ms or 10000, condition, 10)
end

local function message_matching(pattern)
  for _, m in ipairs(messages) do
    if m.text:find(pattern) then
      return m
    end
  end
  return nil
end

local function floating_windows()
  local found = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      table.insert(found, win)
    end
  end
  return found
end

local function window_text(win)
  local buf = vim.api.nvim_win_get_buf(win)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

local function hint_extmarks(bufnr)
  local namespace = vim.api.nvim_get_namespaces()['memq_hints']
  if not namespace then
    return {}
  end
  return vim.api.nvim_buf_get_extmarks(bufnr or 0, namespace, 0, -1, { details = true })
end

local function extmark_text(mark)
  local parts = {}
  for _, chunk in ipairs(mark[4].virt_text or {}) do
    table.insert(parts, chunk[1])
  end
  return table.concat(parts)
end

-- The text of :checkhealth memq's report.
local function checkhealth_text()
  vim.cmd('checkhealth memq')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  return text
end

-- Runs a command and waits for the recall window it opens; returns the window and its text.
local function recall_window(command)
  for _, win in ipairs(floating_windows()) do
    vim.api.nvim_win_close(win, true)
  end
  vim.cmd(command)
  if not wait_for(function()
    return #floating_windows() > 0
  end) then
    return nil, ''
  end
  local win = floating_windows()[1]
  return win, window_text(win)
end

local function check_socket_rule()
  local rpc = require('memq.rpc')
  local uid = tostring(vim.loop.getuid())
  record(rpc.default_socket_path({ MEMQ_SOCKET = '/x/s.sock', XDG_RUNTIME_DIR = '/run/user/7' }) == '/x/s.sock',
    'socket: $MEMQ_SOCKET wins')
  record(rpc.default_socket_path({ XDG_RUNTIME_DIR = '/run/user/7/' }) == '/run/user/7/memq/memqd.sock',
    'socket: $XDG_RUNTIME_DIR/memq/memqd.sock')
  record(rpc.default_socket_path({ MEMQ_SOCKET = '', XDG_RUNTIME_DIR = '' }) == '/tmp/memq-' .. uid .. '/memqd.sock',
    'socket: empty variables count as unset')
end

-- The help file indexes (no duplicate tags, every command has one); built in a copy, not in the source tree.
local function check_help_tags()
  local doc = vim.env.MEMQ_TEST_SCRATCH .. '/doc'
  vim.fn.mkdir(doc, 'p')
  local source = vim.api.nvim_get_runtime_file('doc/memq.txt', false)[1]
  record(source ~= nil, 'doc/memq.txt is on the runtime path')
  if not source then
    return
  end
  vim.fn.writefile(vim.fn.readfile(source), doc .. '/memq.txt')
  local ok, err = pcall(vim.cmd, 'helptags ' .. doc)
  record(ok, ':helptags accepts doc/memq.txt', err)
  local tags = table.concat(vim.fn.readfile(doc .. '/tags'), '\n')
  for _, tag in ipairs({ 'memq', ':MemqRecall', ':MemqSave', ':MemqHints', 'memq-setup', 'memq.statusline()' }) do
    record(tags:find(tag .. '\t', 1, true) == 1 or tags:find('\n' .. tag .. '\t', 1, true) ~= nil, 'help tag ' .. tag)
  end
end

local function run_without_daemon_health()
  local text = checkhealth_text()
  record(text:find('memqd is not running', 1, true) ~= nil and text:find(vim.env.MEMQ_SOCKET, 1, true) ~= nil,
    ':checkhealth memq says memqd is not running on the socket', text)
end

local function run_without_daemon()
  check_socket_rule()
  check_help_tags()
  vim.cmd('edit src/app.c')
  -- BufEnter asked for hints and got nothing back: give the failed connection time to be reported, if it were.
  vim.wait(500)
  record(#messages == 0, 'BufEnter without a daemon is silent', #messages > 0 and messages[1].text or nil)
  record(#hint_extmarks() == 0, 'no hint extmark without a daemon')
  record(require('memq').statusline() == '', 'statusline empty without a daemon')

  vim.cmd('MemqRecall')
  local ok = wait_for(function()
    return #messages > 0
  end)
  record(ok, ':MemqRecall reports something without a daemon')
  local m = message_matching('memqd is not running')
  record(m ~= nil, ':MemqRecall says memqd is not running', messages[1] and messages[1].text or 'no message')
  record(m ~= nil and m.text:find(vim.env.MEMQ_SOCKET, 1, true) ~= nil, 'the message names the socket path')
  record(#floating_windows() == 0, 'no recall window without a daemon')

  -- A peer that accepts and never answers: requests time out with a message, BufEnter stays silent.
  local hang_path = vim.env.MEMQ_TEST_SCRATCH .. '/hang.sock'
  local server = vim.loop.new_pipe(false)
  local accepted = {}
  server:bind(hang_path)
  server:listen(8, function()
    local peer = vim.loop.new_pipe(false)
    server:accept(peer)
    table.insert(accepted, peer)
  end)
  local memq = require('memq')
  memq.setup({ socket = hang_path, timeout_ms = 300 })
  messages = {}
  vim.cmd('edit src/util.c')
  -- Waits for the connection itself (a loaded machine may take a while), then past the 300 ms request timeout.
  record(wait_for(function()
    return #accepted > 0
  end, 10000), 'BufEnter connected to the silent peer')
  vim.wait(800)
  record(#messages == 0, 'BufEnter with a daemon that never answers is silent', messages[1] and messages[1].text)
  vim.cmd('MemqRecall')
  record(wait_for(function()
    return message_matching('did not answer') ~= nil
  end, 10000), ':MemqRecall reports a daemon that does not answer', messages[1] and messages[1].text)
  for _, peer in ipairs(accepted) do
    peer:close()
  end
  server:close()
  memq.setup({})
end

local function restart_daemon()
  local scratch = vim.env.MEMQ_TEST_SCRATCH
  local pid_file = scratch .. '/memqd.pid'
  local pid = tonumber((io.open(pid_file) or error('no pid file ' .. pid_file)):read('*l'))
  vim.loop.kill(pid, 'sigterm')
  local stopped = wait_for(function()
    return vim.loop.fs_stat(pid_file) == nil
  end, 10000)
  record(stopped, 'memqd stopped for the restart')
  vim.fn.system({ vim.env.MEMQ_TEST_MEMQD, '--socket', vim.env.MEMQ_SOCKET, '--data-dir', vim.env.MEMQ_DATA_DIR,
    '--log-file', scratch .. '/memqd.log' })
  record(vim.v.shell_error == 0, 'memqd restarted')
end

local function run_with_daemon()
  local memq = require('memq')
  vim.cmd('edit src/app.c')
  local app = vim.api.nvim_get_current_buf()
  vim.wait(300)
  record(#messages == 0, 'BufEnter on a file without memories is silent', messages[1] and messages[1].text)

  -- Save through the plugin; the note is attached to the buffer's file, relative to the repository root.
  local note = 'retry_count must be reset after a successful reconnect'
  vim.cmd('MemqSave ' .. note)
  record(wait_for(function()
    return message_matching('^memq: saved') ~= nil
  end), ':MemqSave echoes "saved"', messages[1] and messages[1].text)
  local saved = message_matching('^memq: saved') or { text = '' }
  local short_id = saved.text:match('saved (%x+) %(project%)')
  record(short_id ~= nil and #short_id == 8, ':MemqSave echoes the id and the scope', saved.text)

  local err, found = memq.client():request_sync('memory/get', { id = short_id or 'none' })
  record(err == nil and found.summary == note, 'the daemon holds the saved note', err and err.message)
  record(err == nil and vim.deep_equal(found.files, { 'src/app.c' }), 'the note is attached to src/app.c',
    found and vim.inspect(found.files))

  -- An error memqd cannot tie to a request carries "id": null (a ParseError: here invalid UTF-8 in the query). Replies
  -- come back in order, so it answers the oldest request still waiting: the caller gets the daemon's error at once,
  -- not "memqd did not answer" after its timeout.
  local bad_err = memq.client():request_sync('memory/recall',
    { query = 'bad \255 byte', project_root = vim.loop.cwd() })
  record(bad_err ~= nil and bad_err.code == -32700, 'a null-id ParseError answers the request that caused it',
    bad_err and (tostring(bad_err.code) .. ' ' .. tostring(bad_err.message)) or 'no error')
  err = memq.client():request_sync('daemon/status', vim.empty_dict())
  record(err == nil, 'the connection still answers after a ParseError', err and err.message)

  -- The same text again: deduplicated, reported as such.
  messages = {}
  vim.cmd('MemqSave ' .. note)
  record(wait_for(function()
    return message_matching('already saved as ' .. (short_id or '?')) ~= nil
  end), ':MemqSave of the same text says it is already saved', messages[1] and messages[1].text)

  -- A near paraphrase names the first one as similar.
  messages = {}
  vim.cmd('MemqSave retry_count must be reset after every successful reconnect')
  record(wait_for(function()
    return message_matching('similar: %[' .. (short_id or '?') .. '%]') ~= nil
  end), ':MemqSave lists similar memories', messages[1] and messages[1].text)

  -- An over-long note is stored truncated, with the daemon's warning echoed.
  messages = {}
  vim.cmd('MemqSave ' .. string.rep('overlong ', 40))
  record(wait_for(function()
    return message_matching('warning:') ~= nil
  end), ':MemqSave echoes warnings', messages[1] and messages[1].text)

  messages = {}
  memq.save('   ') -- :MemqSave itself needs an argument (nargs=+); blank text can still come from Lua
  record(message_matching('nothing to save') ~= nil, 'saving blank text is refused with a message',
    messages[1] and messages[1].text)

  -- Recall with the word under the cursor (retry_count) as the query: the saved note is in the window.
  vim.api.nvim_win_set_cursor(0, { 1, 5 })
  local win, text = recall_window('MemqRecall')
  record(win ~= nil, ':MemqRecall opens a floating window', messages[1] and messages[1].text)
  record(text:find(note, 1, true) ~= nil, 'the recall window shows the saved note', text)
  record(short_id ~= nil and text:find('[' .. short_id .. ']', 1, true) ~= nil, 'the recall window shows its id', text)
  record(text:find('score %d') ~= nil, 'the recall window shows a score', text)
  record(text:find('retry_count', 1, true) ~= nil and text:find('src/app.c', 1, true) ~= nil,
    'the heading names the file and the query', text)
  if win then
    vim.api.nvim_feedkeys('q', 'x', false)
    record(not vim.api.nvim_win_is_valid(win), 'q closes the recall window')
  end

  -- Stale marker: the file changes in the work tree after the note was saved.
  local file = io.open('src/app.c', 'a')
  file:write('int backoff_ms = 100;\n')
  file:close()
  win, text = recall_window('MemqRecall reconnect')
  record(text:find('STALE', 1, true) ~= nil and text:find('src/app.c changed', 1, true) ~= nil,
    'a note on a changed file is marked stale', text)
  memq.close_recall_window()

  -- :checkhealth memq: the socket, the daemon answering, its version.
  local health = checkhealth_text()
  record(health:find('the socket exists', 1, true) ~= nil, ':checkhealth memq finds the socket', health)
  record(health:find('memqd 0.1.0 answers', 1, true) ~= nil, ':checkhealth memq reaches memqd and names its version',
    health)

  -- The recall window's keys act on the memory of the cursor's line: pin, unpin, hide; :MemqRestore ID; reject.
  local acted_note = 'backoff doubles up to thirty seconds between reconnects'
  local acted_err, acted = memq.client():request_sync('memory/save', { summary = acted_note, files = { 'src/app.c' },
    project_root = vim.loop.cwd() })
  record(acted_err == nil, 'a second note saved on src/app.c', acted_err and acted_err.message)
  local acted_id = acted and acted.id or 'none'
  local function state_of(id)
    local e, m = memq.client():request_sync('memory/get', { id = id, project_root = vim.loop.cwd() })
    return e == nil and m or {}
  end
  local function press(key, done_pattern)
    messages = {}
    local w, t = recall_window('MemqRecall backoff thirty seconds')
    local line = nil
    for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
      if l:find(acted_note, 1, true) and not line then
        line = i
      end
    end
    record(w ~= nil and line ~= nil, 'the recall window shows the second note (' .. key .. ')', t)
    if line then
      vim.api.nvim_win_set_cursor(0, { line + 1, 0 }) -- the facts line acts on the same memory
      vim.api.nvim_feedkeys(key, 'x', false)
    end
    return wait_for(function()
      return message_matching(done_pattern) ~= nil
    end)
  end
  record(press('P', '^memq: pinned %[' .. acted_id:sub(1, 8) .. '%]'), 'P in the recall window pins the memory',
    messages[1] and messages[1].text)
  record(state_of(acted_id).pinned == true, 'the memory is pinned in memqd')
  memq.close_recall_window()
  record(press('U', '^memq: unpinned'), 'U unpins it', messages[1] and messages[1].text)
  record(state_of(acted_id).pinned == false, 'the memory is unpinned in memqd')
  memq.close_recall_window()
  record(press('H', '^memq: hidden'), 'H hides it', messages[1] and messages[1].text)
  record(state_of(acted_id).state == 'hidden', 'the memory is hidden in memqd')
  memq.close_recall_window()
  messages = {}
  vim.cmd('MemqRestore ' .. acted_id:sub(1, 8))
  record(wait_for(function()
    return message_matching('^memq: restored') ~= nil
  end), ':MemqRestore ID restores it', messages[1] and messages[1].text)
  record(state_of(acted_id).state == 'active', 'the memory is active again in memqd')
  local real_input = vim.fn.input
  vim.fn.input = function()
    return 'thirty is wrong, it is sixty'
  end
  record(press('X', '^memq: rejected'), 'X rejects it, asking for the reason', messages[1] and messages[1].text)
  vim.fn.input = real_input
  record(state_of(acted_id).state == 'rejected', 'the memory is rejected in memqd')
  memq.close_recall_window()
  -- A buffer with no memory, no id under the cursor and no hint: nothing to act on, and it says so.
  vim.cmd('enew')
  messages = {}
  vim.cmd('MemqPin')
  record(message_matching('no memory under the cursor') ~= nil, 'an action with no memory under the cursor says so',
    messages[1] and messages[1].text)
  vim.cmd('buffer ' .. app)

  -- :MemqSearch offers the matches in vim.ui.select; the one picked opens in the recall window.
  local offered = nil
  local real_select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    on_choice(items[1])
  end
  win, text = recall_window('MemqSearch reset after reconnect')
  vim.ui.select = real_select
  record(offered ~= nil and #offered >= 1 and offered[1]:find('retry_count', 1, true) ~= nil,
    ':MemqSearch offers the matching memories', offered and table.concat(offered, ' | '))
  record(offered ~= nil and text:find(offered[1]:sub(12), 1, true) ~= nil, 'the picked memory opens in the recall window',
    text)
  memq.close_recall_window()

  -- BufEnter on another file: hints for that file as virtual text on line 1 and in statusline().
  local util_note = 'helper() runs in the signal handler: keep it reentrant' -- under the 60 code points hints show
  err = memq.client():request_sync('memory/save', { summary = util_note, category = 'gotcha',
    files = { 'src/util.c' }, project_root = vim.loop.cwd() })
  record(err == nil, 'a gotcha saved on src/util.c', err and err.message)
  vim.cmd('edit src/util.c')
  local util = vim.api.nvim_get_current_buf()
  local marks = {}
  record(wait_for(function()
    marks = hint_extmarks(util)
    return #marks > 0
  end), 'BufEnter puts a hint extmark in the buffer')
  record(marks[1] ~= nil and marks[1][2] == 0, 'the hint is on line 1')
  record(marks[1] ~= nil and extmark_text(marks[1]):find(util_note, 1, true) ~= nil, 'the hint shows the gotcha',
    marks[1] and extmark_text(marks[1]))
  local status = memq.statusline()
  record(status:find('gotcha', 1, true) ~= nil and status:find('helper()', 1, true) ~= nil,
    'statusline() shows the hint', status)
  messages = {}
  vim.cmd('MemqHints')
  record(message_matching('helper%(%) runs in the signal handler') ~= nil,
    ':MemqHints prints the hint', messages[1] and messages[1].text)
  -- Coming back to the file keeps its hint on screen, although the daemon does not repeat it.
  vim.cmd('buffer ' .. app)
  vim.cmd('buffer ' .. util)
  vim.wait(300)
  marks = hint_extmarks(util)
  record(#marks == 1 and extmark_text(marks[1]):find(util_note, 1, true) ~= nil, 'the hint stays after a revisit')

  -- Hiding the memory elsewhere removes its hint (memory/changed).
  local hidden_id = memq.hint_lines(util)[1] and memq.hint_lines(util)[1]:match('%[(%x+)%]')
  local other = require('memq.rpc').new({ socket = vim.env.MEMQ_SOCKET })
  err = other:request_sync('memory/hide', { id = hidden_id or 'none', reason = 'test', project_root = vim.loop.cwd() })
  record(err == nil, 'the gotcha hidden from another connection', err and err.message)
  record(wait_for(function()
    return #hint_extmarks(util) == 0
  end), 'a hidden memory disappears from the buffer')
  other:close()

  -- Saves a gotcha on src/util.c and waits until the buffer shows it as its first hint; returns its id.
  local function first_hint_on_util(summary)
    local e, saved_hint = memq.client():request_sync('memory/save', { summary = summary, category = 'gotcha',
      files = { 'src/util.c' }, project_root = vim.loop.cwd() })
    record(e == nil and saved_hint.status == 'created', 'a gotcha saved on src/util.c: ' .. summary,
      e and e.message or (saved_hint and tostring(saved_hint.status)))
    vim.cmd('buffer ' .. app)
    vim.cmd('buffer ' .. util)
    record(wait_for(function()
      local first = memq.hint_lines(util)[1]
      return first ~= nil and first:find(summary, 1, true) ~= nil
    end), 'the buffer shows it as its first hint', table.concat(memq.hint_lines(util), ' | '))
    return saved_hint and saved_hint.id or 'none'
  end

  -- :MemqHide whose reason only starts like an id: "2024-era" is not an id as a whole word, so the whole text is the
  -- reason and the buffer's first hint is hidden (not a memory "2024-e" with the reason "ra ...").
  local hide_id = first_hint_on_util('helper() must not allocate: it runs on a tiny stack')
  vim.api.nvim_win_set_cursor(0, { 1, 0 }) -- on "int": no id under the cursor
  messages = {}
  vim.cmd('MemqHide 2024-era allocator assumption')
  record(wait_for(function()
    return message_matching('^memq: hidden %[' .. hide_id:sub(1, 8) .. '%]') ~= nil
  end), ':MemqHide 2024-era ... hides the first hint', messages[1] and messages[1].text)
  record(state_of(hide_id).state == 'hidden', 'the first hint is hidden in memqd')

  -- :MemqPin with the cursor on a number in code ("4096"): not an id, so the buffer's first hint is pinned.
  local pin_id = first_hint_on_util('helper() keeps errno: callers read it after')
  vim.api.nvim_buf_set_lines(util, 1, 1, false, { 'char scratch[4096];' })
  vim.api.nvim_win_set_cursor(0, { 2, 14 })
  record(vim.fn.expand('<cword>') == '4096', 'the cursor is on 4096', vim.fn.expand('<cword>'))
  messages = {}
  vim.cmd('MemqPin')
  record(wait_for(function()
    return message_matching('^memq: pinned %[' .. pin_id:sub(1, 8) .. '%]') ~= nil
  end), ':MemqPin on "4096" pins the first hint', messages[1] and messages[1].text)
  record(state_of(pin_id).pinned == true, 'the first hint is pinned in memqd')
  vim.api.nvim_buf_set_lines(util, 1, 2, false, {})
  vim.bo[util].modified = false

  -- The daemon restarts: the next command reconnects and still finds the note.
  restart_daemon()
  vim.cmd('buffer ' .. app)
  messages = {}
  win, text = recall_window('MemqRecall')
  record(text:find(note, 1, true) ~= nil, 'recall works after the daemon restarted', messages[1] and messages[1].text)
  memq.close_recall_window()
end

local ok, err = pcall(function()
  vim.cmd('runtime plugin/memq.lua')
  record(vim.fn.exists(':MemqRecall') == 2 and vim.fn.exists(':MemqSave') == 2, 'the plugin defines its commands')
  if phase == 'nodaemon' then
    run_without_daemon()
    run_without_daemon_health()
  elseif phase == 'daemon' then
    run_with_daemon()
  else
    record(false, 'unknown phase ' .. tostring(phase))
  end
end)
if not ok then
  record(false, 'the script raised an error', tostring(err))
end
finish()
