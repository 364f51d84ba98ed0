# fish completion for memq(1): every command and option of client/cli_main.cc and client/commands.cc, and memory
# ids (with their summaries) from the running daemon (`memq __complete-ids`, which never starts one).
# Installed as share/fish/vendor_completions.d/memq.fish.

set -l memq_commands save get update list search recall hide restore pin unpin supersede reject unreject purge \
    attach detach hint cochange blast refresh review audit export import stats team status daemon mcp hook bench help version
set -l id_commands get update hide restore pin unpin supersede reject unreject purge attach detach

# The ids from the daemon; on the socket a --socket before the command names, if there is one.
function __memq_ids
    set -l words (commandline -opc)
    set -e words[1]
    set -l socket
    set -l take ''
    for w in $words
        # The word after an option that takes a value (--color's only when it is auto, always or never).
        switch "$take"
            case --socket
                set socket $w
                set take ''
                continue
            case --project --scope --tab
                set take ''
                continue
            case --color
                set take ''
                contains -- $w auto always never; and continue
        end
        switch $w
            case --socket --project --scope --tab --color
                set take $w
            case '--socket=*'
                set socket (string replace -- --socket= '' $w)
            case '-*'
            case '*'
                break
        end
    end
    if test -n "$socket"
        memq --socket (string replace -r -- '^~(?=/|$)' $HOME $socket) __complete-ids 2>/dev/null
    else
        memq __complete-ids 2>/dev/null
    end
end

# True when the command line has no command yet. --color takes the next word only when it is auto, always or never.
function __memq_needs_command
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    set -l color 0
    for w in $words
        if test $skip -eq 1
            set skip 0
            continue
        end
        if test $color -eq 1
            set color 0
            contains -- $w auto always never; and continue
        end
        switch $w
            case --socket --project --scope --tab
                set skip 1
            case --color
                set color 1
            case '-*'
            case '*'
                return 1
        end
    end
    return 0
end

# True when the last word before the cursor is a bare --color (whose value is optional).
function __memq_after_color
    set -l words (commandline -opc)
    test "$words[-1]" = --color
end

# True when the command is one of $argv and no positional word follows it yet.
function __memq_first_arg_of
    set -l words (commandline -opc)
    set -l found 0
    set -l count 0
    for w in $words[2..-1]
        if test $found -eq 0
            if contains -- $w $argv
                set found 1
            end
            continue
        end
        string match -q -- '-*' $w; or set count (math $count + 1)
    end
    test $found -eq 1 -a $count -eq 0
end

complete -c memq -f
# Global options.
complete -c memq -l json -d 'JSON output'
complete -c memq -n __memq_needs_command -l socket -r -F -d "the daemon's socket"
complete -c memq -n __memq_needs_command -l project -r -a '(__fish_complete_directories)' -d 'the project directory'
complete -c memq -n __memq_needs_command -l scope -x -a 'project global team' -d 'only this scope'
complete -c memq -n __memq_needs_command -l tab -x -d 'the agent tab this command acts for'
complete -c memq -l no-pager -d 'do not page'
# --color's value is optional: --color=WHEN, or the next word when it is auto, always or never.
complete -c memq -l color -a 'auto always never' -d 'colour in human output'
complete -c memq -n __memq_after_color -a 'auto always never' -d 'when to colour'
complete -c memq -l help -s h -d "the command's usage"
complete -c memq -n __memq_needs_command -l version -d 'the version'

# Commands.
complete -c memq -n __memq_needs_command -a save -d 'save a memory'
complete -c memq -n __memq_needs_command -a get -d 'one memory in full'
complete -c memq -n __memq_needs_command -a update -d 'change a memory'
complete -c memq -n __memq_needs_command -a list -d 'list memories'
complete -c memq -n __memq_needs_command -a search -d 'search by text'
complete -c memq -n __memq_needs_command -a recall -d 'memories for a task or files'
complete -c memq -n __memq_needs_command -a hide -d 'put a memory away'
complete -c memq -n __memq_needs_command -a restore -d 'make a memory active again'
complete -c memq -n __memq_needs_command -a pin -d 'pin a memory'
complete -c memq -n __memq_needs_command -a unpin -d 'unpin a memory'
complete -c memq -n __memq_needs_command -a supersede -d 'replace a memory by another'
complete -c memq -n __memq_needs_command -a reject -d 'mark a memory wrong'
complete -c memq -n __memq_needs_command -a unreject -d 'undo a reject'
complete -c memq -n __memq_needs_command -a purge -d 'delete for good'
complete -c memq -n __memq_needs_command -a attach -d 'tie a memory to files'
complete -c memq -n __memq_needs_command -a detach -d 'untie a memory from files'
complete -c memq -n __memq_needs_command -a hint -d 'hints for a tool'
complete -c memq -n __memq_needs_command -a cochange -d 'files that change together'
complete -c memq -n __memq_needs_command -a blast -d 'files that depend on a file'
complete -c memq -n __memq_needs_command -a refresh -d 'walk new commits'
complete -c memq -n __memq_needs_command -a review -d 'review memories'
complete -c memq -n __memq_needs_command -a audit -d 'the audit log'
complete -c memq -n __memq_needs_command -a export -d 'export JSONL'
complete -c memq -n __memq_needs_command -a import -d 'import JSONL'
complete -c memq -n __memq_needs_command -a stats -d 'counts and sizes'
complete -c memq -n __memq_needs_command -a team -d 'the team scope (connect, status, disconnect)'
complete -c memq -n __memq_needs_command -a status -d "the daemon's state"
complete -c memq -n __memq_needs_command -a daemon -d 'control memqd'
complete -c memq -n __memq_needs_command -a mcp -d 'MCP server on stdio'
complete -c memq -n __memq_needs_command -a hook -d 'agent hooks'
complete -c memq -n __memq_needs_command -a bench -d 'benchmarks'
complete -c memq -n __memq_needs_command -a help -d "a command's usage"
complete -c memq -n __memq_needs_command -a version -d 'the version'

# Ids from the daemon, for the commands that take one, and for --by and --id.
complete -c memq -n "__memq_first_arg_of $id_commands" -a '(__memq_ids)'
complete -c memq -n '__fish_seen_subcommand_from supersede' -l by -x -a '(__memq_ids)' -d 'the replacement'
complete -c memq -n '__fish_seen_subcommand_from audit' -l id -x -a '(__memq_ids)' -d "one memory's events"
complete -c memq -n '__memq_first_arg_of help' -a "$memq_commands"

# Command options.
complete -c memq -n '__fish_seen_subcommand_from save update list' -l category -x -a 'pref decision gotcha context'
complete -c memq -n '__fish_seen_subcommand_from save update list' -l topic -x
complete -c memq -n '__fish_seen_subcommand_from save update recall hint list' -l file -r -F
complete -c memq -n '__fish_seen_subcommand_from save update' -l details -x
complete -c memq -n '__fish_seen_subcommand_from save' -l source -x -a 'user agent'
complete -c memq -n '__fish_seen_subcommand_from save' -l merge-topics
complete -c memq -n '__fish_seen_subcommand_from save' -l no-anchor -d 'save the files as named'
complete -c memq -n '__fish_seen_subcommand_from update' -l summary -x
complete -c memq -n '__fish_seen_subcommand_from list' -l pinned
complete -c memq -n '__fish_seen_subcommand_from list export' -l state -x -a 'active hidden superseded rejected all'
complete -c memq -n '__fish_seen_subcommand_from list search recall cochange audit bench' -l limit -x
complete -c memq -n '__fish_seen_subcommand_from list' -l offset -x
complete -c memq -n '__fish_seen_subcommand_from search recall bench' -l ranker -x -a 'default reference'
complete -c memq -n '__fish_seen_subcommand_from search recall' -l explain
complete -c memq -n '__fish_seen_subcommand_from recall' -l max-chars -x
complete -c memq -n '__fish_seen_subcommand_from recall' -l threshold -x
complete -c memq -n '__fish_seen_subcommand_from recall' -l no-mark
complete -c memq -n '__fish_seen_subcommand_from hide reject' -l reason -x
complete -c memq -n '__fish_seen_subcommand_from purge' -l yes
complete -c memq -n '__fish_seen_subcommand_from hint' -l query -x
complete -c memq -n '__memq_first_arg_of hint' -a 'read edit write grep diff status commit shell'
complete -c memq -n '__fish_seen_subcommand_from audit' -l since -x
complete -c memq -n '__fish_seen_subcommand_from import' -l from-empryo -r -F
complete -c memq -n '__memq_first_arg_of import cochange blast' -F
complete -c memq -n '__fish_seen_subcommand_from attach detach; and not __memq_first_arg_of attach detach' -F
complete -c memq -n '__memq_first_arg_of daemon' -a 'start stop restart status'
complete -c memq -n '__fish_seen_subcommand_from daemon' -l foreground
complete -c memq -n '__memq_first_arg_of review' -a 'clusters stale dead'
complete -c memq -n '__memq_first_arg_of team' -a 'connect status disconnect'
complete -c memq -n '__memq_first_arg_of hook' -a claude-code
complete -c memq -n '__fish_seen_subcommand_from claude-code' -a 'SessionStart UserPromptSubmit PostToolUse'
complete -c memq -n '__memq_first_arg_of bench' -a 'retrieval load'
complete -c memq -n '__fish_seen_subcommand_from bench' -l dataset -r -a '(__fish_complete_directories)'
complete -c memq -n '__fish_seen_subcommand_from bench' -l n -x
complete -c memq -n '__fish_seen_subcommand_from bench' -l clients -x
complete -c memq -n '__fish_seen_subcommand_from bench' -l max-splits -x
complete -c memq -n '__fish_seen_subcommand_from bench' -l no-semantic
complete -c memq -n '__fish_seen_subcommand_from bench' -l keep
complete -c memq -n '__fish_seen_subcommand_from bench' -l lines
complete -c memq -n '__fish_seen_subcommand_from bench' -l dump -r -F
