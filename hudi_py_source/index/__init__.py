"""Tagging records with the file group that holds them (bloom, simple, global variants, bucket)."""
