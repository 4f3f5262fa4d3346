"""Transitional: the Slack edge's path to the journal exports until it imports the close's
front door (bot.close). The exports are bot/close/exports/, one module per format."""

from bot.close.exports.batch import build_export as build_export
from bot.close.exports.batch import documents as documents
from bot.close.exports.batch import file_name as file_name
from bot.close.exports.batch import map_path as map_path
from bot.close.exports.batch import read_account_map as read_account_map
