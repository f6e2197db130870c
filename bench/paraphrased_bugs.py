"""Bug titles in groups of paraphrases: each inner list is one bug reported by different people in their own words
(not a word swapped: other words, order and detail), and neighbouring groups are other bugs of the same feature
(hard negatives). Written for issue 32's dedup thresholds (``bench/dedup_thresholds.py``)."""

PARAPHRASED_BUGS: list[list[str]] = [
    [
        "App crashes when uploading a profile photo",
        "Changing my avatar makes the app close instantly",
        "Crash on profile picture upload",
    ],
    ["Profile photo is blurry after upload", "Avatar image looks pixelated once saved"],
    [
        "Password reset email never arrives",
        "I don't get the email to reset my password",
        "Reset-password mail is not delivered",
    ],
    ["Password reset link says it has expired", "The link in the reset email is already invalid when I click it"],
    [
        "Login fails with correct password on Android",
        "Can't sign in on my Android phone even though the password is right",
        "Android app rejects valid credentials",
    ],
    ["Two-factor code is not accepted", "The 2FA code from my authenticator app is always rejected"],
    [
        "Dark mode resets to light after restart",
        "The app forgets my dark theme setting every time I reopen it",
        "Theme preference is not saved between sessions",
    ],
    ["Text is unreadable in dark mode", "Black text on a dark background in the settings page when dark theme is on"],
    ["Invoice PDF shows the wrong currency", "My invoice is in dollars although my account is set to euros"],
    [
        "Charged twice for the same month",
        "Double billing on my subscription this month",
        "I was billed two times for one renewal",
    ],
    ["Cannot cancel my subscription", "There is no way to end my plan from the billing page"],
    ["Refund has not arrived after two weeks", "Still waiting for the money back I was promised 14 days ago"],
    [
        "CSV export is missing the last column",
        "Exported spreadsheet drops the final field",
        "The download as CSV loses the rightmost column",
    ],
    ["CSV import fails on files with accents", "Importing a CSV with French characters gives an encoding error"],
    ["Search returns no results for exact product names", "Searching for an item by its full name finds nothing"],
    ["Search is very slow on large workspaces", "Looking something up takes 30 seconds when the workspace is big"],
    [
        "Notifications arrive hours late",
        "Push alerts come in long after the event happened",
        "Delayed notifications on mobile",
    ],
    ["I get the same notification email three times", "Duplicate notification mails for a single comment"],
    ["Calendar sync creates duplicate events", "Every meeting appears twice after connecting Google Calendar"],
    ["Calendar events show in the wrong time zone", "Meetings are shifted by one hour after syncing"],
    ["Webhook retries never stop after a 500", "A failing webhook endpoint is called again forever"],
    ["API key cannot be revoked", "Deleting an API token does not disable it"],
    [
        "Dashboard charts do not load in Safari",
        "Graphs on the dashboard stay blank on Safari",
        "Safari shows empty widgets on the overview page",
    ],
    ["Dashboard numbers differ from the report totals", "The overview page and the monthly report disagree on revenue"],
    ["Shared folder is not visible to invited users", "People I invite cannot see the folder I shared with them"],
    ["User invite link leads to a 404 page", "The invitation URL in the email gives page not found"],
    ["Audit log is missing deleted items", "Deletions do not show up in the activity history"],
    ["Backup download stops at 99 percent", "Data backup never finishes downloading"],
    ["Chat widget covers the checkout button on mobile", "The support bubble hides the pay button on small screens"],
    ["Chat widget does not load behind a corporate proxy", "Support chat stays blank on our company network"],
    ["Keyboard shortcuts stop working after an update", "Hotkeys no longer do anything since the latest release"],
    [
        "App drains the battery in the background",
        "Phone battery empties quickly because the app keeps running",
        "High battery usage while the app is closed",
    ],
    ["Video calls freeze after ten minutes", "The picture stops during long video meetings"],
    ["Audio echo in video calls", "Other people hear themselves twice when I join a call"],
    ["Trial ends earlier than the stated 30 days", "My free trial expired after only three weeks"],
    ["Receipt email has a broken logo", "The image at the top of the receipt mail doesn't show"],
]
"""36 bugs, 81 titles, 54 duplicate pairs."""
