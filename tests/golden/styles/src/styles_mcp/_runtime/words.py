"""The English the search reads a query with: word lists, general to APIs, never one API's.

`search.py` reads a query through them: stop words, the words that hint at a kind of
operation, short forms and their long forms, synonym groups, irregular past forms, phrases
that mean one action, verbs, question words and the verbs that undo. They are plain data, kept
apart so that the ranking reads on its own; each list says what it is for.
"""

from __future__ import annotations

STOP_WORDS = (
    "a an and any are as at be by can do does for from give how i in into is it its "
    "me my of on or our please that the their them these this those to we "
    "what which who whom whose with you your there then than so just also very some "
    "want need would could should will shall may might let lets using via up out off "
    "right now again help like able still already really actually currently quickly kindly "
    "maybe perhaps something thing things stuff everything anything "
    "has have had having been being was were am "
    "one more either"  # "Creates one or more quotes": how many, not what
    " called named titled"  # "a team called infra": what follows is a name
)

# Words a query says that narrow nothing by themselves but hint at a kind of operation;
# kept (not stop words) only to reach their synonyms.
HINT_WORDS = {
    "which": ("list", "get"),
    "what": ("list", "get"),
    "who": ("list", "get", "user", "member"),
    "show": ("list", "get"),
    "me": ("authenticated", "current"),
    "my": ("authenticated", "current"),
    "myself": ("authenticated", "current"),
    "own": ("authenticated",),
    "i": ("authenticated", "current"),
}

# Short forms APIs write in names and paths ({repo}, /orgs/) and the long forms people say:
# both sides of the index meet on the long form.
SHORT_FORMS = {
    "repo": "repository",
    "org": "organization",
    "organisation": "organization",
    "config": "configuration",
    "env": "environment",
    "auth": "authentication",
    "info": "information",
    "msg": "message",
    "pr": "pull",
    "app": "application",
    "dir": "directory",
    "id": "identifier",
    "cancell": "cancel",
    "favourite": "favorite",
    "colour": "color",
    "licence": "license",
    "authorise": "authorize",
    "analyse": "analyze",
    "dm": "direct",
    "ci": "workflow",
    "db": "database",
    "pwd": "password",
    "every": "all",
    "admin": "administrator",
}

# Everyday words for the same thing, general to APIs (verbs, then nouns). Each line is a
# group: every word of it also matches the others, at `_SYNONYM_WEIGHT`.
SYNONYM_GROUPS = """
get retrieve fetch read view see display look inspect detail lookup
list browse enumerate index
create add new make open register establish publish submit generate initiate post store save write
update edit modify change set patch adjust configure rename mark
delete remove erase destroy drop purge discard clear prune clean
cancel stop abort halt terminate kill end interrupt
start run begin launch trigger execute rerun resume spin
send post transfer deliver dispatch notify
add assign attach invite append insert include grant
remove unassign detach revoke kick uninvite
search find query lookup filter match
download export fetch
upload import attach
review reviewer approve approval
cost spend spent billing bill usage price charge expense
user member person people account profile teammate collaborator employee
message chat post text
file attachment document upload
comment note reply remark
online presence status available away active
remind reminder
vote upvote
watch watcher subscribe follow follower notify
history log changelog audit timeline activity
label tag
ticket issue bug
channel conversation room
team group
password secret credential
token key credential
diff compare difference comparison
copy duplicate clone fork
money fund balance amount
pay payment charge payout
refund reverse reversal return
invoice bill
discount coupon promotion
chargeback dispute
disk space storage usage
notification notify alert
vulnerability vulnerable advisory alert security
unused dangling orphaned stale idle
login logged signin authenticated session
move transition
stats statistics metrics usage
authenticated current self
enable activate turn
disable deactivate suspend
deploy deployment release rollout
revert rollback undo restore
mute snooze silence
accept approve confirm
reject deny decline
ask request
link connect associate
unlink disconnect dissociate
setting preference configuration option
permission access role right
photo picture avatar icon
webhook hook callback
customer client buyer
product item sku catalog
company organization tenant workspace
folder directory collection
error failure incident exception
job task
latest newest recent last
close resolve complete finish done
schedule later scheduled
report analytics insight
quota limit
count total many number
email mail
allow allowlist whitelist permit
try attempt
song track tune
top most best popular
get obtain grab print
create raise
update upgrade downgrade bump tweak toggle flip overwrite scale
delete nuke wipe trash
stop shutdown shut
restart reboot bounce
retry rerun replay redeliver repeat
send forward fire
comment reply respond answer
acknowledge ack
close dismiss
pause freeze hold suspend
resume unpause continue unfreeze
install setup
uninstall remove
sync synchronize refresh reload
preview estimate simulate
calculate compute
payout withdraw withdrawal
deposit fund topup
enroll signup subscribe register
unsubscribe optout
event meeting appointment calendar
employee staff worker agent
ticket case
contact lead
deal opportunity
order purchase sale transaction
invoice receipt
address location place
message sms text
server host machine instance node
alert alarm
schedule cron timer recurring
environment stage
branch ref reference
commit revision changeset
cost fee
tax vat gst
plan subscription tier
seat license
"""

# The past forms of common irregular verbs, which no suffix rule undoes ("the messages I
# sent", "who made this").
IRREGULAR_WORDS = """
sent:send made:make built:build ran:run wrote:write written:write took:take taken:take got:get
gotten:get gave:give given:give began:begin begun:begin found:find kept:keep left:leave
lost:lose paid:pay sold:sell told:tell bought:buy brought:bring held:hold hid:hide
hidden:hide froze:freeze frozen:freeze broke:break broken:break threw:throw thrown:throw
withdrew:withdraw went:go gone:go did:do done:do saw:see seen:see came:come chose:choose
chosen:choose drew:draw drawn:draw spun:spin
"""

# Phrases: what people say in several words for one action ("get rid of", "take dave out of
# the group", "turn on"), and everyday phrases for what catalogues name with a noun: being told
# when something happens is a new webhook, "who did it" asks for the history (an audit log), access
# to a shared thing is a membership, "how much is it allowed" asks for the limit, and "set a",
# "take a", "leave a" make something new. A line is the phrase, `...` where up to five words
# may come between (the object), a word in brackets that stays, and after `=` the words the
# phrase means. English, the same for every API.
PHRASE_LINES = """
get rid of = delete
take ... out = remove
take ... off = remove
take ... away = remove
take ... down = disable
take ... offline = disable
bring ... back online = enable
bring ... online = enable
bring ... back = restore
put ... online = enable
turn ... on = enable
turn ... off = disable
switch ... on = enable
switch ... off = disable
kick ... off = start
kick ... out = remove
set ... up = create
spin ... up = create
spin ... down = stop
shut ... down = stop
roll ... back = revert
go back = revert
put ... [in] = add
put ... [into] = add
copy ... out = download
hand ... over = transfer
find out = get
fill ... in = update
fill ... out = update
clean ... up = clean
get notified = create webhook
notify ... [when] = create webhook
notify ... [whenever] = create webhook
let ... know [when] = create webhook
tell ... [when] = create webhook
who [changed] = who history audit
who [did] = who history audit
who [made] = who history audit
who [edited] = who history audit
who [modified] = who history audit
who [deleted] = who history audit
what [changed] = what history audit
what [did] = what history audit
give ... [access] = add member
give ... [permission] = add member
give ... [role] = add
give ... [rights] = add member
set [a] = create
set [an] = create
take [a] = create
leave [a] = add
leave [an] = add
how ... [allowed] = how quota limit
"""

# Verbs: when a query says one, a tool whose title and method say none of its kind comes
# after the tools that do ("remove the image" is not "list the images").
VERB_WORDS = """
get retrieve fetch read view see display look inspect describe lookup show check list browse
enumerate create add new make open register establish publish submit generate initiate post raise
store save write update edit modify change set patch adjust configure rename delete remove erase
destroy drop purge discard clear prune clean cancel stop abort halt terminate kill end
interrupt start run begin launch trigger execute rerun resume spin send transfer deliver
dispatch notify email assign attach invite append insert include grant unassign detach revoke
kick uninvite search find query filter download export upload import approve merge fork copy
duplicate clone move transition archive unarchive pin unpin star unstar restart pause unpause
watch follow subscribe unsubscribe close reopen mark complete finish resolve compare count test
verify validate enable disable join leave connect disconnect push build lock unlock block unblock
accept reject deny capture pay void finalize confirm expire resize rotate sync reset replace
upvote vote obtain grab print upgrade downgrade bump tweak toggle flip overwrite scale nuke
wipe trash shutdown shut reboot bounce retry replay redeliver repeat forward fire mail reply
respond answer acknowledge ack dismiss freeze hold suspend unfreeze install uninstall
synchronize refresh reload preview estimate simulate calculate compute withdraw deposit fund
enroll signup optout
"""

QUESTION_WORDS = """
is are am was were does do did has have can could how who whom which what where when whose why
"""

UNDOING_WORDS = """
delete remove erase destroy drop purge discard clear prune clean cancel stop abort halt
terminate kill end interrupt unassign detach revoke kick uninvite disable deactivate suspend
reject deny decline unlink disconnect dissociate leave close archive unpin unstar unsubscribe
unfollow unwatch mute nuke wipe trash shutdown uninstall dismiss
"""
